"""The router's reading of a Route, pinned by OpenShift's behaviour case by case."""

from __future__ import annotations

import dataclasses

from tests.support import routes as f

from shiftnet.api import Route
from shiftnet.router.admission import INVALID_HOST, NO_HOST_VALUE, admit
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
