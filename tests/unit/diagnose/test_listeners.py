"""diagnose finds the router's listening addresses in the router's record, not in haproxy.cfg.

The record and the rendered ``bind`` lines come from one function of the writer; these
tests show they agree for each kind of bind address, and that a garbled record gives
no address rather than a wrong one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shiftnet.diagnose.listeners import listener_addresses
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.names import HTTP_FRONTEND, HTTPS_FRONTEND, LISTENERS_RECORD
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.listeners import record_listeners
from shiftnet.router.model import build_model

PATHS = RenderPaths(run_dir="/run/sn", default_certificate="/run/sn/default.pem")


@pytest.mark.parametrize(
    ("address", "http", "https"),
    [
        ("127.0.0.1", "127.0.0.1:8080", "127.0.0.1:8443"),
        ("", ":8080", ":8443"),  # every address
        ("::1", "[::1]:8080", "[::1]:8443"),
    ],
)
def test_the_record_names_the_addresses_the_rendered_frontends_bind(
    tmp_path: Path, address: str, http: str, https: str
) -> None:
    config = RouterConfig(http_port=8080, https_port=8443, bind_address=address)
    text = render(build_model(admit([], [], config), []), config, PATHS).files["haproxy.cfg"]
    cfg = text.decode()
    assert f"frontend {HTTP_FRONTEND} from base\n  bind {http}\n" in cfg
    assert f"frontend {HTTPS_FRONTEND} from base\n  bind {https}\n" in cfg
    record_listeners(tmp_path, config)
    record = (tmp_path / "run" / LISTENERS_RECORD).read_text()
    assert listener_addresses(record) == {
        HTTP_FRONTEND: (address, 8080),
        HTTPS_FRONTEND: (address, 8443),
    }
    assert (tmp_path / "run" / LISTENERS_RECORD).stat().st_mode & 0o077 == 0


def test_a_garbled_record_gives_no_address_rather_than_a_wrong_one() -> None:
    for text in ("", "{", "[]", "null", json.dumps({"public": [1, 2]})):
        assert listener_addresses(text) == {}, text
    entries = {
        HTTP_FRONTEND: {"address": "127.0.0.1", "port": True},
        HTTPS_FRONTEND: {"address": "127.0.0.1", "port": 8443},
        "stats": {"address": "127.0.0.1", "port": 1936},
    }
    assert listener_addresses(json.dumps(entries)) == {HTTPS_FRONTEND: ("127.0.0.1", 8443)}
    for bad in ({"address": 1, "port": 80}, {"address": "", "port": 0}, {"port": 80}):
        assert listener_addresses(json.dumps({HTTP_FRONTEND: bad})) == {}, bad
