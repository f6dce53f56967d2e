"""Route certificates through the runtime API: which ``ssl cert``/``crt-list`` commands a
change of certificates needs, and which file changes still need a reload."""

from __future__ import annotations

import pytest
from tests.support import routes as f
from tests.support.tls import TestCA

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import commands
from shiftnet.router.haproxy.commands import RuntimeAPIError
from shiftnet.router.haproxy.description import Description
from shiftnet.router.haproxy.live import Fallback, LiveState, Plan, plan
from shiftnet.router.haproxy.live_certs import certificate_commands
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model

CONFIG = RouterConfig(http_port=8080, https_port=8443, max_connections=2000, threads=2)
PATHS = RenderPaths(run_dir="/run/x", default_certificate="/etc/default.pem")
EPS = [f.endpoints("svc", ["10.0.0.1"])]
CA = TestCA()
FILE_A = "certs/ns,a.pem"


def edge(name: str, pair: object | None = None) -> object:
    tls: dict[str, str] = {"termination": "edge"}
    if pair is not None:
        tls |= {"certificate": pair.cert_pem, "key": pair.key_pem}  # type: ignore[attr-defined]
    return f.route(name, tls=tls)


def described(routes: list) -> Description:
    return render(build_model(admit(routes, [], CONFIG), EPS), CONFIG, PATHS).description


def ok(outcome: Plan | Fallback) -> Plan:
    assert isinstance(outcome, Plan), outcome
    return outcome


def heads(cmds: list[str]) -> list[str]:
    return [c.split(" <<", 1)[0] for c in cmds]


def test_a_changed_certificate_is_set_and_committed_and_nothing_else() -> None:
    one, two = CA.issue("a.example.com"), CA.issue("a.example.com")
    live = LiveState.of(described([edge("a", one)]))
    wanted = described([edge("a", two)])
    p = ok(plan(live, wanted))
    assert heads(p.commands) == [f"set ssl cert {FILE_A}", f"commit ssl cert {FILE_A}"]
    assert p.commands[0].endswith(wanted.files[FILE_A].decode())
    assert p.state.clean and p.state.files[FILE_A] == wanted.files[FILE_A]
    assert ok(plan(p.state, wanted)).commands == []


def test_a_route_that_starts_bringing_a_certificate_loads_it_then_lists_it() -> None:
    live = LiveState.of(described([edge("a")]))
    p = ok(plan(live, described([edge("a", CA.issue("a.example.com"))])))
    assert heads(p.commands) == [
        f"new ssl cert {FILE_A}",
        f"set ssl cert {FILE_A}",
        f"commit ssl cert {FILE_A}",
        "add ssl crt-list crt-list.txt",
    ]
    assert p.commands[-1] == f"add ssl crt-list crt-list.txt <<\n{FILE_A} a.example.com\n"


def test_a_route_that_drops_its_certificate_is_unlisted_then_deleted() -> None:
    live = LiveState.of(described([edge("a", CA.issue("a.example.com"))]))
    p = ok(plan(live, described([edge("a")])))
    assert p.commands == [
        f"del ssl crt-list crt-list.txt {FILE_A}",
        f"del ssl cert {FILE_A}",
    ]


def test_a_new_route_with_a_certificate_loads_it_before_its_map_entries() -> None:
    live = LiveState.of(described([]))
    p = ok(plan(live, described([edge("a", CA.issue("a.example.com"))])))
    first_map = next(i for i, c in enumerate(p.commands) if " map " in c)
    crt = next(i for i, c in enumerate(p.commands) if c.startswith("add ssl crt-list"))
    assert crt < first_map


def test_other_files_still_need_a_reload() -> None:
    old = {"crt-list.txt": b"", "allowlists/x": b"1.2.3.4\n"}
    assert certificate_commands(old, {**old, "allowlists/x": b"5.6.7.8\n"}) is None
    assert certificate_commands(old, dict(old)) == []


def test_a_crt_list_that_does_not_list_each_certificate_needs_a_reload() -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"
    old = {"crt-list.txt": b"", FILE_A: pem}
    assert certificate_commands(old, {"crt-list.txt": b"", FILE_A: pem + pem}) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: commands.set_ssl_cert("certs/a.pem", b"x\n\nshow ssl cert\n"),
        lambda: commands.set_ssl_cert("certs/a.pem", b"x\r\n"),
        lambda: commands.set_ssl_cert("certs/../a.pem", b"x\n"),
        lambda: commands.new_ssl_cert("certs/a.pem; shutdown frontend x"),
        lambda: commands.add_ssl_crt_list("crt-list.txt", "certs/a.pem a\n\nshow info"),
    ],
)
def test_no_payload_or_name_can_carry_a_second_command(make: object) -> None:
    with pytest.raises(RuntimeAPIError):
        make()  # type: ignore[operator]


def test_a_certificate_too_long_for_a_cli_payload_goes_by_reload() -> None:
    pair = CA.issue("a.example.com")
    live = LiveState.of(described([edge("a", pair)]))
    chain = "".join(CA.issue(f"c{i}.example.com").cert_pem for i in range(30))
    big = f.route(
        "a",
        tls={
            "termination": "edge",
            "certificate": pair.cert_pem + chain,
            "key": pair.key_pem,
        },
    )
    wanted = described([big])
    assert len(wanted.files[FILE_A]) > commands.MAX_PAYLOAD
    assert plan(live, wanted) == Fallback("certificate")
