# ruff: noqa: E501  (case tables)
"""``ip_allowlist``/``ip_whitelist`` as OpenShift's router reads them (``parseIPList``:
white space as Go's strings.Fields, invalid entries dropped), except that a value
never fails open: where OpenShift applies no allowlist, shiftnet keeps what parses,
and refuses every client when nothing does."""

from __future__ import annotations

import pytest
from tests.support import routes as f

import shiftnet.router.annotations as ann
from shiftnet.router.admission import admit
from shiftnet.router.allowlist import parse_allowlist
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.render import RenderPaths, render_haproxy
from shiftnet.router.model import build_model

# (id, value, networks kept, entries dropped)
CASES: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
    ("one ip", "1.2.3.4", ("1.2.3.4/32",), ()),
    ("onesie", "172.16.32.1/24", ("172.16.32.0/24",), ()),
    ("duo", "172.16.32.1/24 10.1.2.3", ("10.1.2.3/32", "172.16.32.0/24"), ()),
    (
        "interleaved blank entries",
        "172.16.32.1/24  1.2.3.4  5.6.7.8 ",
        ("1.2.3.4/32", "5.6.7.8/32", "172.16.32.0/24"),
        (),
    ),
    (
        "tabs and newlines separate",
        "1.2.3.4\t5.6.7.8\n9.9.9.9",
        ("1.2.3.4/32", "5.6.7.8/32", "9.9.9.9/32"),
        (),
    ),
    ("no-break space separates (Go)", "1.2.3.4\xa05.6.7.8", ("1.2.3.4/32", "5.6.7.8/32"), ()),
    ("ideographic space separates (Go)", "1.2.3.4\u30005.6.7.8", ("1.2.3.4/32", "5.6.7.8/32"), ()),
    ("\\x1c does not separate (Go)", "1.2.3.4\x1c5.6.7.8", (), ("1.2.3.4\x1c5.6.7.8",)),
    ("surrounding white space kept (OpenShift: no allowlist)", " 1.2.3.4 ", ("1.2.3.4/32",), ()),
    ("one bad entry dropped", "10.0.0.0/8 evil", ("10.0.0.0/8",), ("evil",)),
    ("every entry bad: nobody admitted", "evil bad", (), ("evil", "bad")),
    ("repeats merge", "10.0.0.1 10.0.0.1/32", ("10.0.0.1/32",), ()),
    ("ipv6", "::1 2001:db8::/32", ("::1/128", "2001:db8::/32"), ()),
    ("ipv4 in ipv6", "::ffff:1.2.3.4", ("::ffff:102:304/128",), ()),
    ("everything", "0.0.0.0/0 ::/0", ("0.0.0.0/0", "::/0"), ()),
    ("leading zero octet (Go refuses)", "010.1.1.1", (), ("010.1.1.1",)),
    ("netmask instead of bits", "10.0.0.0/255.0.0.0", (), ("10.0.0.0/255.0.0.0",)),
    ("bits out of range", "10.0.0.0/33 ::/129", (), ("10.0.0.0/33", "::/129")),
    ("bits with leading zero (Go dtoi)", "10.0.0.0/024", ("10.0.0.0/24",), ()),
    ("empty bits", "10.0.0.0/", (), ("10.0.0.0/",)),
    ("zone", "fe80::1%eth0", (), ("fe80::1%eth0",)),
    ("three octets", "1.2.3", (), ("1.2.3",)),
    ("host name", "example.com 10.0.0.1", ("10.0.0.1/32",), ("example.com",)),
]


@pytest.mark.parametrize(
    ("value", "kept", "dropped"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_entries(value: str, kept: tuple[str, ...], dropped: tuple[str, ...]) -> None:
    got = parse_allowlist(value)
    assert (got.networks, got.dropped) == (kept, dropped)


def test_long_lists_are_kept_whole() -> None:
    value = " ".join(f"10.{i // 250}.{i % 250}.1" for i in range(2000))
    options, warnings = ann.parse_route_options({ann.IP_ALLOWLIST: value})
    assert options.ip_allowlist is not None and len(options.ip_allowlist) == 2000
    assert warnings == ()


@pytest.mark.parametrize(
    ("annotations", "kept"),
    [
        ({ann.IP_ALLOWLIST: "10.0.0.1", ann.IP_WHITELIST: "::1"}, ("10.0.0.1/32",)),
        ({ann.IP_ALLOWLIST: "", ann.IP_WHITELIST: "::1"}, ("::1/128",)),
        ({ann.IP_ALLOWLIST: " \t", ann.IP_WHITELIST: "::1"}, ("::1/128",)),
        ({ann.IP_WHITELIST: "::1"}, ("::1/128",)),
        ({ann.IP_ALLOWLIST: "bad", ann.IP_WHITELIST: "::1"}, ()),
        ({ann.IP_ALLOWLIST: ""}, None),
        ({ann.IP_ALLOWLIST: "   "}, None),
    ],
)
def test_which_annotation(annotations: dict[str, str], kept: tuple[str, ...] | None) -> None:
    options, _ = ann.parse_route_options(annotations)
    assert options.ip_allowlist == kept


def test_dropped_entries_are_a_warning_on_the_route_status() -> None:
    route = f.route("r", annotations={ann.IP_ALLOWLIST: "10.0.0.0/8 evil 1.2.3"})
    decision = admit([route], [], RouterConfig()).decision("ns", "r")
    assert decision is not None and decision.admitted
    assert decision.message == (
        f"annotation {ann.IP_ALLOWLIST}: entries that are not IP addresses or CIDRs ignored: "
        "'evil', '1.2.3'; 1 valid entry kept"
    )
    nothing = f.route("n", annotations={ann.IP_WHITELIST: " ".join(f"x{i}" for i in range(9))})
    message = admit([nothing], [], RouterConfig()).decision("ns", "n").message  # type: ignore[union-attr]
    assert message == (
        f"annotation {ann.IP_WHITELIST}: entries that are not IP addresses or CIDRs ignored: "
        "'x0', 'x1', 'x2', 'x3', 'x4' and 4 more; no valid entry is left, so every client is refused"
    )


def test_an_allowlist_with_no_valid_entry_renders_a_deny_for_every_client() -> None:
    config = RouterConfig(share_backends=False)
    routes = [
        f.route("none", annotations={ann.IP_ALLOWLIST: "evil"}),
        f.route("tcp", annotations={ann.IP_ALLOWLIST: "evil"}, tls={"termination": "passthrough"}),
    ]
    out = render_haproxy(
        build_model(admit(routes, [], config), [f.endpoints("svc", ["10.1.0.1"])]),
        config,
        RenderPaths(run_dir="/run/x", default_certificate="/etc/x.pem"),
    )
    cfg = out["haproxy.cfg"].decode()
    assert 'http-request deny if !{ src -f "allowlists/ns,none.txt" }' in cfg
    assert 'tcp-request content reject if !{ src -f "allowlists/ns,tcp.txt" }' in cfg
    assert out["allowlists/ns,none.txt"] == b"" and out["allowlists/ns,tcp.txt"] == b""
