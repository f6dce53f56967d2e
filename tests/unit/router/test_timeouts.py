"""Timeout annotations read as OpenShift's router reads them: ``$timeSpecPattern``
(``[1-9][0-9]*(us|ms|s|m|h|d)?``), then ``clipHAProxyTimeoutValue`` (values beyond
HAProxy's 2147483647ms, or beyond int64 nanoseconds, clipped to it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.support import routes as f
from tests.support.tls import TestCA

import shiftnet.router.annotations as ann
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.files import write_file_set
from shiftnet.router.haproxy.render import RenderPaths, render_haproxy
from shiftnet.router.model import build_model
from shiftnet.router.timeouts import MAX_MS, HAProxyTime, parse_haproxy_time

CLIP = HAProxyTime(MAX_MS, clipped=True)

# (value, what OpenShift's router makes of it: ms, clipped, or None = ignored)
CASES: list[tuple[str, HAProxyTime | None]] = [
    ("5000", HAProxyTime(5000)),
    ("1", HAProxyTime(1)),
    ("500ms", HAProxyTime(500)),
    ("30s", HAProxyTime(30_000)),
    ("5m", HAProxyTime(300_000)),
    ("1h", HAProxyTime(3_600_000)),
    ("1d", HAProxyTime(86_400_000)),
    ("24d", HAProxyTime(2_073_600_000)),
    ("1500us", HAProxyTime(2)),  # HAProxy rounds microseconds up
    ("1us", HAProxyTime(1)),
    ("2147483647", HAProxyTime(MAX_MS)),
    ("2147483647ms", HAProxyTime(MAX_MS)),
    ("2147483648", CLIP),
    ("2147483647001us", CLIP),
    ("2147483647000us", HAProxyTime(MAX_MS)),
    ("25d", CLIP),
    ("596h", HAProxyTime(2_145_600_000)),
    ("597h", CLIP),
    ("106751d", CLIP),  # the largest day count int64 nanoseconds hold
    ("106752d", CLIP),  # Go: OverflowError, clipped too
    ("9223372036854775us", CLIP),
    ("9223372036854775808", CLIP),  # beyond int64 itself
    ("1" + "0" * 40 + "s", CLIP),
    ("0", None),
    ("0s", None),
    ("05s", None),
    ("1m30s", None),
    ("1.5s", None),
    ("30S", None),
    ("30 s", None),
    (" 30s", None),
    ("30s ", None),
    ("-5s", None),
    ("+5s", None),
    ("5sec", None),
    ("5ns", None),
    ("", None),
    ("٣s", None),  # a non-ASCII digit
]


@pytest.mark.parametrize(("value", "want"), CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_time_values(value: str, want: HAProxyTime | None) -> None:
    assert parse_haproxy_time(value) == want


def test_annotations_use_it_and_warn() -> None:
    options, warnings = ann.parse_route_options(
        {ann.TIMEOUT: "30d", ann.TIMEOUT_TUNNEL: "1m30s", ann.HEALTH_CHECK_INTERVAL: "500ms"}
    )
    assert options.timeout_ms == MAX_MS
    assert options.timeout_tunnel_ms is None
    assert options.health_check_interval_ms == 500
    assert warnings == (
        f"annotation {ann.TIMEOUT}='30d' clipped to HAProxy's largest time, 2147483647ms",
        f"annotation {ann.TIMEOUT_TUNNEL}='1m30s' ignored: must be a whole number without "
        "leading zeros and at most one unit (us, ms, s, m, h or d), such as 500ms, 30s, 5m or 1h",
    )


def test_a_clipped_timeout_is_one_haproxy_accepts(tmp_path: Path) -> None:
    """HAProxy itself checks the rendered configuration (``haproxy -c``)."""
    config = RouterConfig(http_port=18080, https_port=18443, stats_port=0, threads=1)
    routes = [
        f.route("http", annotations={ann.TIMEOUT: "100d", ann.TIMEOUT_TUNNEL: "9" * 30}),
        f.route("tcp", tls={"termination": "passthrough"}, annotations={ann.TIMEOUT: "26d"}),
    ]
    model = build_model(admit(routes, [], config), [f.endpoints("svc", ["10.1.0.1"])])
    files = render_haproxy(model, config, RenderPaths(str(tmp_path), str(tmp_path / "d.pem")))
    cfg = files["haproxy.cfg"].decode()
    assert cfg.count("timeout server 2147483647ms") >= 1
    assert cfg.count("timeout tunnel 2147483647ms") >= 2
    write_file_set(tmp_path / "conf", files)
    default = TestCA().issue("default.example")
    (tmp_path / "d.pem").write_text(default.cert_pem + default.key_pem)
    check = subprocess.run(
        ["haproxy", "-c", "-f", "haproxy.cfg"],
        cwd=tmp_path / "conf",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
