"""Routes with identical backend sections share one HAProxy backend (ROUTER_SHARE_BACKENDS).

The sharing must never change where a request goes: every route's map
entries name a backend whose servers are exactly that route's pods, with
that route's options. These tests read the rendered files back and check
that, plus what the runtime planner is told after a change.
"""

from __future__ import annotations

import dataclasses
import re

from tests.support import routes as f

from shiftnet.router.admission import admit, route_key
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import render as r
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy.writer import backend_text
from shiftnet.router.model import build_model

CONFIG = RouterConfig(
    http_port=8080, https_port=8443, max_connections=2000, threads=2, spare_backends=0
)
PATHS = r.RenderPaths(run_dir="/run/sn", default_certificate="/run/sn/default.pem")
BALANCE = {"haproxy.router.openshift.io/balance": "roundrobin"}


def _policies(routes: list, eps: list, config: RouterConfig = CONFIG) -> dict:
    return {p.key: p for p in build_model(admit(routes, [], config), eps).policies}


def _render(routes: list, eps: list, config: RouterConfig = CONFIG) -> dict[str, str]:
    out = r.render_haproxy(build_model(admit(routes, [], config), eps), config, PATHS)
    return {k: v.decode() for k, v in out.items()}


def _sections(cfg: str) -> dict[str, str]:
    return dict(re.findall(r"^backend (\S+)[^\n]*\n(.*?)(?:\n\n|\Z)", cfg, re.S | re.M))


def _servers(section: str) -> list[str]:
    """The members' addresses and weights (spare slots left out)."""
    return sorted(
        f"{m[0]} {m[1]}"
        for m in re.findall(r"server s\d+ (\S+)(?: cookie \S+)?.*? weight (\d+)$", section, re.M)
        if not m[0].startswith("127.0.0.1:1")
    )


def _host_backend(out: dict[str, str], host: str) -> str:
    entries = dict(line.split(" ", 1) for line in out[r.HTTP_PREFIX_MAP].splitlines())
    return entries[f"{host}/"]


def test_routes_to_the_same_pods_share_the_first_routes_backend() -> None:
    routes = [f.route("b", "b.test"), f.route("a", "a.test"), f.route("c", "c.test")]
    eps = [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]
    out = _render(routes, eps)
    sections = _sections(out[r.CONFIG_FILE])
    assert [name for name in sections if name.startswith("be_http:")] == ["be_http:ns:a"]
    assert {_host_backend(out, h) for h in ("a.test", "b.test", "c.test")} == {"be_http:ns:a"}
    assert _servers(sections["be_http:ns:a"]) == ["10.0.0.1:8080 1", "10.0.0.2:8080 1"]
    # Health checks are counted once per backend, not once per route.
    assert r.render(build_model(admit(routes, [], CONFIG), eps), CONFIG, PATHS).fit.checked == 4


def test_services_with_equal_pods_share_too_and_other_pods_or_options_do_not() -> None:
    routes = [
        f.route("a", "a.test", service="s1"),
        f.route("b", "b.test", service="s2"),  # other service, same pod: shared
        f.route("c", "c.test", service="s3"),  # other pod
        f.route("d", "d.test", service="s1", annotations=BALANCE),  # other options
        f.route("e", "e.test", service="s1", tls={"termination": "edge"}),  # other kind
        f.route(
            "g",
            "g.test",
            service="s1",
            annotations={"haproxy.router.openshift.io/ip_whitelist": "10.1.0.0/16"},
        ),
    ]
    eps = [
        f.endpoints("s1", ["10.0.0.1"]),
        f.endpoints("s2", ["10.0.0.1"]),
        f.endpoints("s3", ["10.0.0.3"]),
    ]
    out = _render(routes, eps)
    sections = _sections(out[r.CONFIG_FILE])
    assert _host_backend(out, "b.test") == "be_http:ns:a"
    assert _host_backend(out, "c.test") == "be_http:ns:c"
    assert _host_backend(out, "d.test") == "be_http:ns:d"
    assert "balance roundrobin" in sections["be_http:ns:d"]
    assert "be_edge_http:ns:e" in sections
    # An allowlist names its route's own file: never shared, even with equal pods.
    assert _host_backend(out, "g.test") == "be_http:ns:g"
    assert "allowlists/" in sections["be_http:ns:g"]


def test_every_route_is_served_by_a_backend_with_its_own_pods_and_options() -> None:
    """Whatever groups form, a route's backend renders as the route's own would."""
    routes = [
        f.route(
            f"r{i}", f"h{i}.test", service=f"s{i % 4}", annotations=BALANCE if i % 5 == 0 else None
        )
        for i in range(30)
    ]
    eps = [
        f.endpoints(f"s{i}", ["10.0.0.1"] if i < 2 else [f"10.0.0.{i}", "10.0.0.9"])
        for i in range(4)
    ]
    shared = _render(routes, eps)
    alone = _render(routes, eps, dataclasses.replace(CONFIG, share_backends=False))
    shared_sections = _sections(shared[r.CONFIG_FILE])
    alone_sections = _sections(alone[r.CONFIG_FILE])
    assert len(shared_sections) < len(alone_sections)
    for i in range(30):
        host = f"h{i}.test"
        served, own = _host_backend(shared, host), _host_backend(alone, host)
        assert own == f"be_http:ns:r{i}"

        def body(name: str, sections: dict[str, str]) -> str:
            # Apart from the names derived from the backend name (cookie name and values).
            return re.sub(r"cookie \S+", "cookie -", sections[name])

        assert body(served, shared_sections) == body(own, alone_sections)


def test_sharing_off_renders_a_backend_per_route() -> None:
    routes = [f.route("a", "a.test"), f.route("b", "b.test")]
    eps = [f.endpoints("svc", ["10.0.0.1"])]
    out = _render(routes, eps, dataclasses.replace(CONFIG, share_backends=False))
    assert _host_backend(out, "b.test") == "be_http:ns:b"
    assert "backend be_http:ns:b " in out[r.CONFIG_FILE]


def test_a_route_alone_renders_exactly_as_without_sharing() -> None:
    routes = [f.route("a", "a.test", service="s1"), f.route("b", "b.test", service="s2")]
    eps = [f.endpoints("s1", ["10.0.0.1"]), f.endpoints("s2", ["10.0.0.2"])]
    assert _render(routes, eps) == _render(
        routes, eps, dataclasses.replace(CONFIG, share_backends=False)
    )


def test_when_the_first_route_goes_the_next_one_takes_the_backend() -> None:
    a, b, c = (f.route(n, f"{n}.test") for n in "abc")
    eps = [f.endpoints("svc", ["10.0.0.1"])]
    assembly = Assembly(CONFIG, PATHS)
    assembly.update(_policies([a, b, c], eps))
    assert set(assembly.backends.values()) == {"be_http:ns:a"}
    served = assembly.update({route_key(a): None})
    assert served == {route_key(a): None}
    assert assembly.backends == {route_key(b): "be_http:ns:b", route_key(c): "be_http:ns:b"}
    assert assembly.files() == r.render_haproxy(
        build_model(admit([b, c], [], CONFIG), eps), CONFIG, PATHS
    )
    # Other routes' map entries moved: the runtime API alone cannot serve that.
    assert assembly.runtime_backends() is None


def test_runtime_backends_for_a_group_whose_pods_change_together() -> None:
    a, b = f.route("a", "a.test"), f.route("b", "b.test")
    assembly = Assembly(CONFIG, PATHS)
    assembly.update(_policies([a, b], [f.endpoints("svc", ["10.0.0.1"])]))
    # Both routes' service gets a second pod: one section changes, nothing else.
    assembly.update(_policies([a, b], [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]))
    sections = assembly.runtime_backends()
    assert sections is not None and list(sections) == ["be_http:ns:a"]
    assert _servers(backend_text(sections["be_http:ns:a"])) == [
        "10.0.0.1:8080 1",
        "10.0.0.2:8080 1",
    ]


def test_a_route_whose_pods_change_alone_leaves_the_group() -> None:
    a, b = f.route("a", "a.test", service="s1"), f.route("b", "b.test", service="s2")
    eps = [f.endpoints("s1", ["10.0.0.1"]), f.endpoints("s2", ["10.0.0.1"])]
    assembly = Assembly(CONFIG, PATHS)
    assembly.update(_policies([a, b], eps))
    assert assembly.backends[route_key(b)] == "be_http:ns:a"
    moved = [eps[0], f.endpoints("s2", ["10.0.0.2"])]
    assembly.update({route_key(b): _policies([a, b], moved)[route_key(b)]})
    assert assembly.backends == {route_key(a): "be_http:ns:a", route_key(b): "be_http:ns:b"}
    assert assembly.runtime_backends() is None  # b's map entries name a new backend
    assert assembly.files() == r.render_haproxy(
        build_model(admit([a, b], [], CONFIG), moved), CONFIG, PATHS
    )


def test_routes_without_pods_keep_their_own_backends() -> None:
    """So a first ready pod is one ``set server`` on the route's own backend."""
    a, b = f.route("a", "a.test", service="s1"), f.route("b", "b.test", service="s2")
    eps = [f.endpoints("s1", []), f.endpoints("s2", [])]
    assembly = Assembly(CONFIG, PATHS)
    assembly.update(_policies([a, b], eps))
    assert assembly.backends == {route_key(a): "be_http:ns:a", route_key(b): "be_http:ns:b"}
    ready = [f.endpoints("s1", ["10.0.0.1"]), eps[1]]
    assembly.update({route_key(a): _policies([a, b], ready)[route_key(a)]})
    sections = assembly.runtime_backends()
    assert sections is not None and list(sections) == ["be_http:ns:a"]
