"""The router's fast paths agree with the slow, general code they short-cut.

Rendering 10,000 routes in under a second needed shortcuts for the common
case: hosts checked by one regex, dotted quads taken as they are, one-backend
routes and one-member pools without dicts and sorting, server lines from a
cached template, one shared ``Admitted`` condition. Each test
below runs the shortcut and the general code (or a reference written out
here, as the code read before the shortcut) on tricky inputs and asks for
identical answers, errors included.
"""

from __future__ import annotations

import ipaddress
import re
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftnet.api import Endpoints, Route, RouteIngress, RouteIngressCondition, Service, names
from shiftnet.api.fielderrors import invalid, required
from shiftnet.api.route import RouteTargetReference
from shiftnet.api.route_validation import (
    ALLOW_NON_DNS_COMPLIANT_HOST,
    _all_spec_errors,
    _backend_errors,
    path_errors,
    route_spec_errors,
)
from shiftnet.router import model as M
from shiftnet.router.admission import admit
from shiftnet.router.annotations import RouteOptions
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import build, escape, writer
from shiftnet.router.haproxy.names import backend_digest

TRICKY_HOSTS = [
    "",
    "a",
    "A",
    "-",
    "a-",
    "-a",
    "a-b",
    "a--b",
    "a.b",
    "a..b",
    ".a",
    "a.",
    "a.-b",
    "a.b-",
    "1",
    "1.2.3.4",
    "xn--bcher-kva.example",
    "a_b.com",
    "a b",
    "a.com\n",
    "\na.com",
    "a.com.",
    "é.com",
    "a\u0131.com",
    "*.a.com",
    "a/b",
    "a:80",
    "x" * 63,
    "x" * 64,
    ("x" * 63 + ".") * 3 + "x",
    ("a." * 126) + "a",
    ("a." * 126) + "ab",
    ("a." * 127) + "a",
    "x" * 63 + ".com",
    "x" * 64 + ".com",
    "h00001.bench.example.com",
    "UPPER.example.com",
    "a\x00b",
]
HOST_CHARS = "ab0-.A_ \n\xe9"


def _old_escape_hostname(value: str) -> str:
    """escape.hostname as it read before its one-regex form."""
    label = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
    if (
        len(value) > 253
        or not re.fullmatch(rf"{label}(\.{label})*", value)
        or any(len(part) > 63 for part in value.split("."))
    ):
        raise escape.UnsafeValue(f"host {value!r} is not a lowercase DNS name")
    return value


def _outcome(fn: object, *args: object) -> object:
    try:
        return ("ok", fn(*args))  # type: ignore[operator]
    except escape.UnsafeValue as err:
        return ("error", str(err))


@pytest.mark.parametrize("host", TRICKY_HOSTS)
def test_hostname_errors_fast_path_agrees_with_the_detailed_checks(host: str) -> None:
    assert names.hostname_errors(host) == names._hostname_problems(host)


@pytest.mark.parametrize("host", TRICKY_HOSTS)
def test_escape_hostname_agrees_with_its_old_form(host: str) -> None:
    assert _outcome(escape.hostname, host) == _outcome(_old_escape_hostname, host)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=HOST_CHARS, max_size=80))
def test_host_checks_agree_on_random_strings(host: str) -> None:
    assert names.hostname_errors(host) == names._hostname_problems(host)
    assert _outcome(escape.hostname, host) == _outcome(_old_escape_hostname, host)


def _ipaddress_server_address(ip: str, port: int) -> str:
    """escape.server_address without its dotted-quad shortcut."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        raise escape.UnsafeValue(f"server address {ip!r} is not an IP address") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.scope_id is not None:
        raise escape.UnsafeValue(f"server address {ip!r} has a zone, which HAProxy cannot use")
    if not isinstance(port, int) or not 0 < port < 65536:
        raise escape.UnsafeValue(f"server port {port!r} is not between 1 and 65535")
    return f"[{addr}]:{port}" if addr.version == 6 else f"{addr}:{port}"


TRICKY_ADDRESSES = [
    "1.2.3.4",
    "0.0.0.0",
    "255.255.255.255",
    "256.1.1.1",
    "1.2.3",
    "1.2.3.4.5",
    "01.2.3.4",
    "1.2.3.04",
    "127.000.0.1",
    "1.2.3.4 ",
    " 1.2.3.4",
    "1.2.3.4\n",
    "1.2.3.-4",
    "1.2.3.+4",
    "\uff11.2.3.4",
    "::1",
    "::ffff:1.2.3.4",
    "fe80::1%eth0",
    "2001:DB8::1",
    "",
    "a.b.c.d",
    "127.77.0.1",
    "10.0.0.1/32",
]


@pytest.mark.parametrize("ip", TRICKY_ADDRESSES)
@pytest.mark.parametrize("port", [80, 0, 65535, 65536, -1])
def test_server_address_shortcut_agrees_with_ipaddress(ip: str, port: int) -> None:
    escape.server_address.cache_clear()
    assert _outcome(escape.server_address, ip, port) == _outcome(
        _ipaddress_server_address, ip, port
    )


@pytest.mark.parametrize("ip", TRICKY_ADDRESSES)
def test_pool_members_keep_canonical_addresses_only(ip: str) -> None:
    eps = Endpoints.model_validate(
        {
            "metadata": {"name": "s", "namespace": "ns"},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80}]}],
        }
    )
    pool = M.pool_from_endpoints("ns", "s", eps)
    try:
        expected = [str(ipaddress.ip_address(ip))]
    except ValueError:
        expected = []
    assert [m.ip for m in pool.members] == expected


def test_pools_of_one_and_of_many_members_are_sorted_and_unique() -> None:
    ips = ["10.0.0.10", "10.0.0.9", "::1", "10.0.0.9", "9.0.0.1"]
    eps = Endpoints.model_validate(
        {
            "metadata": {"name": "s", "namespace": "ns"},
            "subsets": [
                {"addresses": [{"ip": ip} for ip in ips], "ports": [{"port": 80}, {"port": 81}]},
                {
                    "addresses": [{"ip": "10.0.0.9", "targetRef": {"name": "p"}}],
                    "ports": [{"port": 80}],
                },
            ],
        }
    )
    pool = M.pool_from_endpoints("ns", "s", eps)
    assert [(m.ip, m.port, m.pod) for m in pool.members] == [
        ("9.0.0.1", 80, ""),
        ("9.0.0.1", 81, ""),
        ("10.0.0.9", 80, ""),
        ("10.0.0.9", 80, "p"),
        ("10.0.0.9", 81, ""),
        ("10.0.0.10", 80, ""),
        ("10.0.0.10", 81, ""),
        ("::1", 80, ""),
        ("::1", 81, ""),
    ]
    assert [(m.ip, m.port, m.pod) for m in M.resolve_members(pool, None)] == [
        ("9.0.0.1", 80, ""),
        ("10.0.0.9", 80, ""),
        ("10.0.0.10", 80, ""),
        ("::1", 80, ""),
    ]
    single = Endpoints.model_validate(
        {
            "metadata": {"name": "s", "namespace": "ns"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
        }
    )
    assert M.pool_from_endpoints("ns", "s", single).members == (
        M.PoolMember("10.0.0.1", 80, "", "", True),
    )


def _old_path_errors(route: Route) -> list[object]:
    """route_validation.path_errors as it read before its one-match shortcut."""
    p = route.spec.path
    if not p:
        return []
    out: list[object] = []
    if not p.startswith("/"):
        out.append(invalid("spec.path", p, "path must begin with /"))
    if "#" in p or any(ch.isspace() for ch in p):
        out.append(invalid("spec.path", p, "cannot contain # or spaces"))
    elif any(not ch.isprintable() for ch in p):
        out.append(invalid("spec.path", p, "path must not contain control characters"))
    if route.spec.tls is not None and route.spec.tls.termination == "passthrough":
        out.append(invalid("spec.path", p, "passthrough termination does not support paths"))
    return out


TRICKY_PATHS = [
    "",
    "/",
    "/a",
    "a",
    "/a b",
    "/a#b",
    "#",
    "/a\tb",
    "/a\x00",
    "/a\x7f",
    "/é",
    "/a?b",
    "/%[src]",
    '/"',
    "/\\",
    "/\u2028",
    "/\xa0",
    " /",
    "/" + "x" * 3000,
    "/a\n",
    "/$HOME",
]


@pytest.mark.parametrize("path", TRICKY_PATHS)
@pytest.mark.parametrize("termination", [None, "edge", "passthrough"])
def test_path_errors_shortcut_agrees_with_the_full_checks(
    path: str, termination: str | None
) -> None:
    spec: dict[str, object] = {"host": "a.com", "path": path, "to": {"name": "s"}}
    if termination:
        spec["tls"] = {"termination": termination}
    route = Route.model_validate({"metadata": {"name": "r", "namespace": "ns"}, "spec": spec})
    assert path_errors(route) == _old_path_errors(route)


def _pool(members: int, ports: tuple[int, ...] = (8080,)) -> M.Pool:
    return M.Pool(
        "ns",
        "s",
        tuple(
            M.PoolMember(f"10.0.0.{i + 1}", port, "http" if j == 0 else "", f"p{i}", j == 0)
            for i in range(members)
            for j, port in enumerate(ports)
        ),
    )


@pytest.mark.parametrize("members", [0, 1, 2, 5])
@pytest.mark.parametrize("weight", [None, 0, 1, 100, 256])
@pytest.mark.parametrize("target_port", [None, 8080, 9999, "8080", "http", "nope"])
def test_one_backend_shortcut_agrees_with_the_general_path(
    members: int, weight: int | None, target_port: int | str | None
) -> None:
    spec: dict[str, object] = {"host": "a.com", "to": {"name": "s", "weight": weight}}
    if target_port is not None:
        spec["port"] = {"targetPort": target_port}
    route = Route.model_validate({"metadata": {"name": "r", "namespace": "ns"}, "spec": spec})
    pools = {("ns", "s"): _pool(members, (8080, 9090))}
    service = Service.model_validate(
        {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}
    )
    services = {("ns", "s"): service}
    port = M._target_port(route)
    fast = M._one_backend(route.spec.to, "ns", port, pools, services)
    general = M._backends(route, "ns", port, pools, services)
    assert fast == general


def _loop_server_lines(policy: M.L7Policy, backend: str, tail: str) -> list[str]:
    """The slot lines as the general loop writes them."""
    cookies = policy.termination != M.PASSTHROUGH and not policy.options.disable_cookies
    base = backend_digest(backend)[32:60]
    lines = []
    for i, server in enumerate(build.slot_servers(policy.servers)):
        cookie = f" cookie {base}{i:04x}" if cookies else ""
        if server is None:
            lines.append(f"  server s{i} 127.0.0.1:1{cookie}{tail} weight 0 disabled")
        else:
            addr = escape.server_address(server.ip, server.port)
            weight = max(0, min(256, int(server.weight)))
            lines.append(f"  server s{i} {addr}{cookie}{tail} weight {weight}")
    return lines


def _policy(termination: str, servers: int, options: RouteOptions) -> M.L7Policy:
    return M.L7Policy(
        namespace="ns",
        name="r",
        rule=M.Rule("a.com", "", False),
        termination=termination,
        insecure_policy=M.INSECURE_NONE,
        tls=None,
        options=options,
        target_port=None,
        targets=(),
        servers=tuple(
            M.Server(f"10.1.{i}.{i * 7 % 250}", 8000 + i, "ns_s", "", 1 + i * 50)
            for i in range(servers)
        ),
        warnings=(),
    )


@pytest.mark.parametrize("servers", [0, 1, 2, 3, 4, 9])
@pytest.mark.parametrize("termination", [M.HTTP, M.EDGE, M.REENCRYPT, M.PASSTHROUGH])
@pytest.mark.parametrize(
    "options",
    [RouteOptions(), RouteOptions(disable_cookies=True, pod_concurrent_connections=10)],
)
def test_server_line_template_agrees_with_the_loop(
    servers: int, termination: str, options: RouteOptions
) -> None:
    policy = _policy(termination, servers, options)
    defaults = build.BackendDefaults("leastconn", "source", "append", 5000)
    tail = ""
    if servers > 1:
        tail += " check inter 5s"
    if options.pod_concurrent_connections:
        tail += f" maxconn {options.pod_concurrent_connections}"
    if termination == M.REENCRYPT:
        tail += " ssl verify none"
    backend = build.route_parts(policy, defaults).backend
    text = writer.backend_text(backend)
    lines = [ln for ln in text.split("\n") if ln.startswith("  server ")]
    assert lines == _loop_server_lines(policy, backend.name, tail)
    slots = build.slot_servers(policy.servers)
    assert len(slots) == build.slot_count(servers)
    for i, server in enumerate(slots):
        if server is not None:  # home slot, or probed onwards from it
            home = zlib.crc32(f"{server.ip}:{server.port}".encode()) % len(slots)
            assert all(slots[j % len(slots)] is not None for j in range(home, i + 1))


def test_checked_count_matches_the_rendered_check_lines() -> None:
    defaults = build.BackendDefaults("leastconn", "source", "append", 5000)
    for servers in (0, 1, 2, 5):
        parts = build.route_parts(_policy(M.HTTP, servers, RouteOptions()), defaults)
        lines = writer.backend_text(parts.backend).split("\n")
        checked = sum(1 for ln in lines if ln.startswith("  server ") and " check " in ln)
        assert parts.checked == checked


def test_admitted_entries_equal_freshly_built_ones() -> None:
    routes = [
        Route.model_validate(
            {
                "metadata": {
                    "name": f"r{i}",
                    "namespace": "ns",
                    "uid": f"u{i}",
                    "creationTimestamp": f"2026-01-01T00:00:0{i}Z",
                },
                "spec": {"host": host, "to": {"name": "s"}},
            }
        )
        for i, host in enumerate(["a.com", "b.com", "a.com", "bad_host"])
    ]
    config = RouterConfig()
    result = admit(routes, [], config)
    for decision in result.decisions.values():
        fresh = RouteIngress(
            host=decision.host or None,
            router_name=config.name,
            conditions=[
                RouteIngressCondition(
                    type="Admitted",
                    status="True" if decision.admitted else "False",
                    reason=decision.reason,
                    message=decision.message,
                )
            ],
            wildcard_policy="None",
            router_canonical_hostname=config.canonical_hostname,
        )
        assert decision.ingress == fresh
        assert repr(decision.ingress) == repr(fresh)
        assert decision.ingress is not None
        assert decision.ingress.model_fields_set == fresh.model_fields_set
    ingresses = [d.ingress for d in result.decisions.values() if d.ingress is not None]
    assert len({id(i.conditions) for i in ingresses}) == len(ingresses)  # lists never shared


@pytest.mark.parametrize(
    "name", ["s", "svc-1", "-s", "s-", "S", "s_1", "s.1", "", "x" * 63, "x" * 64, "s\n", "é"]
)
@pytest.mark.parametrize("kind", ["Service", "Pod"])
@pytest.mark.parametrize("weight", [None, -1, 0, 256, 257])
def test_backend_errors_shortcut_agrees_with_the_full_checks(
    name: str, kind: str, weight: int | None
) -> None:
    ref = RouteTargetReference(kind=kind, name=name, weight=weight)
    expected: list[object] = []
    if not name:  # any other name is accepted, as upstream
        expected.append(required("spec.to.name"))
    if kind != "Service":
        expected.append(invalid("spec.to.kind", kind, "must reference a Service"))
    if weight is not None and not 0 <= weight <= 256:
        expected.append(
            invalid("spec.to.weight", weight, "weight must be an integer between 0 and 256")
        )
    assert _backend_errors(ref, "spec.to") == expected


@pytest.mark.parametrize("host", ["a.com", "", "A.com", "x" * 64 + ".com", "a_b.com", "a.com\n"])
@pytest.mark.parametrize("path", ["", "/a", "/a b", "a"])
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"tls": {"termination": "edge"}},
        {"port": {"targetPort": 0}},
        {"subdomain": "x_y"},
        {"wildcardPolicy": "Subdomain"},
        {"wildcardPolicy": "Bogus"},
        {"alternateBackends": [{"name": "b", "weight": 300}]},
        {"to": {"name": "S", "weight": 1}},
        {"to": {"kind": "Pod", "name": "s"}},
    ],
)
@pytest.mark.parametrize("relaxed", [False, True])
def test_route_spec_shortcut_agrees_with_every_check(
    host: str, path: str, extra: dict[str, object], relaxed: bool
) -> None:
    spec: dict[str, object] = {"host": host, "path": path, "to": {"name": "s"}, **extra}
    annotations = {ALLOW_NON_DNS_COMPLIANT_HOST: "true"} if relaxed else {}
    route = Route.model_validate(
        {"metadata": {"name": "r", "namespace": "ns", "annotations": annotations}, "spec": spec}
    )
    assert route_spec_errors(route) == _all_spec_errors(route)
