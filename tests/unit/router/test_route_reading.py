"""The router's reading of a Route, pinned by OpenShift's behaviour case by case."""

from __future__ import annotations

from tests.support import routes as f

from shiftnet.router.admission import admit
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
