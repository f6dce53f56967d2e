"""The router's reading of a Route, pinned by OpenShift's behaviour case by case."""

from __future__ import annotations

import dataclasses

import pytest
from tests.support import routes as f

from shiftnet.api import Route
from shiftnet.router.admission import HOST_ALREADY_CLAIMED, INVALID_HOST, NO_HOST_VALUE, admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.render import RenderPaths, render_haproxy
from shiftnet.router.model import build_model

CONFIG = RouterConfig(
    http_port=8080,
    https_port=8443,
    stats_port=1936,
    allow_wildcard_routes=True,
    max_connections=2000,
    threads=2,
    share_backends=False,
)
PATHS = RenderPaths(run_dir="/var/run/shiftnet", default_certificate="/etc/shiftnet/default.pem")


def test_a_backend_named_unlike_any_service_is_admitted_and_has_no_servers() -> None:
    routes = [
        f.route("odd", service="My_Service", alternates=[("svc with space", 10), ("x.y", 5)]),
        f.route("ok"),
    ]
    result = admit(routes, [], CONFIG)
    assert sorted(r.metadata.name for r in result.admitted) == ["odd", "ok"]
    model = build_model(result, [f.endpoints("svc", ["10.1.0.1"])])
    odd = next(p for p in model.policies if p.name == "odd")
    assert odd.servers == ()
    cfg = render_haproxy(model, CONFIG, PATHS)["haproxy.cfg"].decode()
    assert "My_Service" not in cfg and "svc with space" not in cfg
    assert "10.1.0.1:8080" in cfg


def _without_host(route: Route, subdomain: str | None = None) -> Route:
    spec = route.spec.model_copy(update={"host": "", "subdomain": subdomain})
    return route.model_copy(update={"spec": spec})


def test_subdomain_takes_the_router_domain() -> None:
    """OpenShift's router: no host, a subdomain and ROUTER_DOMAIN -> subdomain.domain;
    without ROUTER_DOMAIN the route has no host (NoHostValue)."""
    route = _without_host(f.route("web"), "shop.team")
    config = dataclasses.replace(CONFIG, router_domain="apps.example.com")
    decision = admit([route], [], config).decision("ns", "web")
    assert decision is not None and decision.admitted
    assert decision.host == "shop.team.apps.example.com"
    assert decision.ingress is not None and decision.ingress.host == "shop.team.apps.example.com"
    bare = admit([route], [], CONFIG).decision("ns", "web")
    assert bare is not None and bare.reason == NO_HOST_VALUE
    # a host wins over the subdomain; so does it over ROUTER_SUBDOMAIN's template
    hosted = f.route("web", "given.example.org")
    hosted = hosted.model_copy(update={"spec": hosted.spec.model_copy(update={"subdomain": "x"})})
    both = dataclasses.replace(config, subdomain_template="${name}-${namespace}.t.example")
    assert admit([hosted], [], both).decision("ns", "web").host == "given.example.org"  # type: ignore[union-attr]
    assert admit([route], [], both).decision("ns", "web").host == "shop.team.apps.example.com"  # type: ignore[union-attr]


def test_the_router_refuses_a_long_label_whatever_the_annotation() -> None:
    """OpenShift's router checks every label (ValidateHostName) without the annotation."""
    host = "a" * 64 + ".example.com"
    route = f.route(
        "long", host, annotations={"route.openshift.io/allow-non-dns-compliant-host": "true"}
    )
    decision = admit([route], [], CONFIG).decision("ns", "long")
    assert decision is not None and decision.reason == INVALID_HOST


# Wildcard routes on a single-label host, as OpenShift's host admitter has them: the
# wildcard key (GetDomainForHost) is "", so such a route claims the domain "" and is
# served on its own host only (its host regexp falls back to the host itself).
SINGLE_LABEL_CASES = [
    ("alone", [("a", "intranet", True, "", "2026-01-01")], {"a": None}),
    (
        "wildcard blocks a plain single-label host of another namespace",
        [("a", "intranet", True, "", "2026-01-01"), ("b", "other", False, "", "2026-01-02")],
        {"a": None, "b": HOST_ALREADY_CLAIMED},
    ),
    (
        "an older plain single-label host blocks the wildcard",
        [("b", "other", False, "", "2026-01-01"), ("a", "intranet", True, "", "2026-01-02")],
        {"a": HOST_ALREADY_CLAIMED, "b": None},
    ),
    (
        "two in one namespace, same path: the older wins",
        [("a", "one", True, "", "2026-01-01"), ("a", "two", True, "", "2026-01-02")],
        {"a/one": None, "a/two": HOST_ALREADY_CLAIMED},
    ),
    (
        "two in one namespace, other paths: both",
        [("a", "one", True, "/x", "2026-01-01"), ("a", "two", True, "/y", "2026-01-02")],
        {"a/one": None, "a/two": None},
    ),
    (
        "a plain host of the same namespace: both",
        [("a", "intranet", True, "", "2026-01-01"), ("a", "other", False, "", "2026-01-02")],
        {"a/intranet": None, "a/other": None},
    ),
]


@pytest.mark.parametrize(
    ("routes", "want"), [c[1:] for c in SINGLE_LABEL_CASES], ids=[c[0] for c in SINGLE_LABEL_CASES]
)
def test_wildcard_on_a_single_label_host(
    routes: list[tuple[str, str, bool, str, str]], want: dict[str, str | None]
) -> None:
    objs = [
        f.route(host, host, namespace=ns, wildcard=wild, path=path, created=f"{day}T00:00:00Z")
        for ns, host, wild, path, day in routes
    ]
    result = admit(objs, [], CONFIG)
    got = {}
    for (ns, host, *_), obj in zip(routes, objs, strict=True):
        decision = result.decision(ns, obj.metadata.name)
        assert decision is not None
        key = ns if len({r[0] for r in routes}) == len(routes) else f"{ns}/{host}"
        got[key] = decision.reason
    assert got == want


def test_a_single_label_wildcard_route_serves_its_own_host_only() -> None:
    route = f.route("intranet", "intranet", wildcard=True)
    result = admit([route], [], CONFIG)
    decision = result.decision("ns", "intranet")
    assert decision is not None and decision.admitted
    assert decision.ingress is not None and decision.ingress.wildcard_policy == "Subdomain"
    model = build_model(result, [f.endpoints("svc", ["10.1.0.1"])])
    assert model.policies[0].rule.wildcard is False
    out = render_haproxy(model, CONFIG, PATHS)
    assert out["os_http_prefix.map"] == b"intranet/ be_http:ns:intranet\n"
    assert all(b"intranet" not in v for k, v in out.items() if "wildcard" in k)


@pytest.mark.parametrize("target", ["my port", 70000, -8, "0"])
def test_a_target_port_no_service_has_is_admitted_without_servers(target: int | str) -> None:
    """OpenShift accepts any targetPort but 0 and "": it simply matches no port."""
    route = f.route("odd", target_port=target)
    result = admit([route], [], CONFIG)
    decision = result.decision("ns", "odd")
    assert decision is not None and decision.admitted
    (policy,) = build_model(result, [f.endpoints("svc", ["10.1.0.1"])]).policies
    assert policy.servers == ()
    assert any("matches no port" in w for w in policy.warnings)
