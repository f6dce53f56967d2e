"""OpenShift's haproxy_* labels joined from the router's description, not from names."""

from __future__ import annotations

from tests.support import routes as f

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import render as r
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy_stats import families, parse_stat_csv, stat_labels
from shiftnet.router.model import build_model

CONFIG = RouterConfig(http_port=8080, https_port=8443, max_connections=2000, threads=2)
PATHS = r.RenderPaths(run_dir="/run/sn", default_certificate="/run/sn/default.pem")
HEADER = "# pxname,svname,scur,stot,bin,bout,status,weight,hrsp_2xx,hrsp_5xx,mode,conn_tot\n"


def _served(routes: list, eps: list):  # type: ignore[no-untyped-def]
    policies = {p.key: p for p in build_model(admit(routes, [], CONFIG), eps).policies}
    assembly = Assembly(CONFIG, PATHS)
    assembly.update(policies)
    _, description = assembly.snapshot()
    return assembly.backends, policies, dict(description.backends)


def test_servers_are_labelled_with_pod_service_and_route() -> None:
    routes = [f.route("web", "web.test", service="shop")]
    backends, policies, live = _served(routes, [f.endpoints("shop", ["10.0.0.1", "10.0.0.2"])])
    labels = stat_labels(backends, policies, live, {})
    proxy = backends[("ns", "web")]
    assert labels.backends[proxy] == ("http", "ns", "web")
    servers = {v for (p, _), v in labels.servers.items() if p == proxy}
    assert servers == {
        ("10.0.0.1:8080", "ns", "web", "shop-0", "shop"),
        ("10.0.0.2:8080", "ns", "web", "shop-1", "shop"),
    }


def test_a_route_on_a_spare_keeps_its_labels_and_unused_spares_are_left_out() -> None:
    routes = [f.route("web", "web.test", service="shop")]
    backends, policies, live = _served(routes, [f.endpoints("shop", ["10.0.0.1"])])
    own = backends[("ns", "web")]
    spare = "be_spare_http:3"
    running = {spare: live.pop(own)._replace(name=spare)}  # what HAProxy runs for the route
    running["be_spare_http:4"] = running[spare]._replace(name="be_spare_http:4", slots=(None,))
    labels = stat_labels(backends, policies, running, {own: spare})
    assert labels.backends == {spare: ("http", "ns", "web")}
    (server,) = [k for k in labels.servers if k[0] == spare]
    text = HEADER + "\n".join(
        [
            "public,FRONTEND,1,9,100,900,OPEN,,7,1,http,9",
            f"{spare},{server[1]},0,7,70,700,UP,1,7,0,http,",
            f"{spare},BACKEND,0,7,70,700,UP,1,7,0,http,",
            "be_spare_http:4,s0,0,0,0,0,MAINT,0,0,0,http,",
            "be_spare_http:4,BACKEND,0,0,0,0,UP,0,0,0,http,",
            "openshift_default,BACKEND,0,2,20,200,UP,0,0,2,http,",
        ]
    )
    out = {m.name: m for m in families(parse_stat_csv(text), labels)}
    ok = [
        s for s in out["haproxy_server_http_responses_total"].samples if s.labels["code"] == "2xx"
    ]
    assert [(s.labels["pod"], s.labels["route"], s.value) for s in ok] == [("shop-0", "web", 7)]
    backend_rows = {s.labels["backend"]: s.value for s in out["haproxy_backend_up"].samples}
    assert backend_rows == {"http": 1.0, "other/openshift_default": 1.0}  # no unused spare
    (frontend,) = out["haproxy_frontend_connections_total"].samples
    assert frontend.labels == {"frontend": "public"} and frontend.value == 9
