"""The pure checks of ``shiftnet diagnose``: which check fails first, what it says, the fix."""

from __future__ import annotations

import dataclasses

from tests.support.routes import route

from shiftnet.diagnose.proxy_rules import PortRules
from shiftnet.diagnose.route_checks import diagnose_route
from shiftnet.diagnose.route_facts import (
    Admission,
    BackendService,
    ClientTarget,
    Member,
    PodView,
    RequestResult,
    RouteFacts,
    RouterView,
)
from shiftnet.diagnose.route_lookup import find_route, longest_prefix, request_key
from shiftnet.diagnose.service_checks import ServiceFacts, diagnose_service

BACKEND = "be_http:ns:web"


def router(**changes: object) -> RouterView:
    view = RouterView(
        name="router",
        http_bind=("127.0.0.1", 8080),
        https_bind=("127.0.0.1", 8443),
        lookup="os_http_prefix.map key app.example.com//",
        rendered=BACKEND,
        running=BACKEND,
        route_backends=(BACKEND,),
    )
    return dataclasses.replace(view, master_running=True, **changes)  # type: ignore[arg-type]


def healthy(**changes: object) -> RouteFacts:
    facts = RouteFacts(
        namespace="ns",
        name="web",
        host="app.example.com",
        path="",
        termination="http",
        insecure_policy="",
        target=ClientTarget("http", "app.example.com", 8080, "/", True),
        resolved=("127.0.0.1",),
        resolve_error="",
        reachable={"127.0.0.1:8080": ""},
        admissions=(Admission("router", True, host="app.example.com"),),
        routers=(router(),),
        route_labels={},
        services=(
            BackendService(
                "web",
                True,
                {"app": "web"},
                (Member("web-1", "127.10.0.2", 8080, True, None),),
                (PodView("web-1", True, "ready"),),
            ),
        ),
        request=RequestResult(200),
    )
    return dataclasses.replace(facts, **changes)  # type: ignore[arg-type]


def first(facts: RouteFacts) -> tuple[int, str, str]:
    report = diagnose_route(facts)
    for number, check in enumerate(report.checks, 1):
        if not check.ok:
            return number, check.found, check.fix
    return 0, "", ""


def test_healthy_route_passes_every_check() -> None:
    report = diagnose_route(healthy())
    assert report.ok and len(report.checks) == 8
    assert all(line.startswith(("diagnose", "✓")) for line in report.lines())
    assert report.as_json()["ok"] is True


def test_dns_pointing_elsewhere_names_both_addresses_and_the_fix() -> None:
    number, found, fix = first(healthy(resolved=("10.0.0.5",)))
    assert number == 2
    assert found == ("DNS answers 10.0.0.5 for app.example.com but the router listens on 127.0.0.1")
    assert "`--resolve app.example.com:8080:127.0.0.1`" in fix and "hosts entry" in fix


def test_wrong_port_is_the_client_check() -> None:
    target = ClientTarget("http", "app.example.com", 9999, "/", True)
    number, found, fix = first(healthy(target=target))
    assert number == 1 and "port 9999" in found and fix == "use http://app.example.com:8080/"


def test_not_admitted_names_the_router_and_the_older_route() -> None:
    refused = Admission(
        "router",
        False,
        "HostAlreadyClaimed",
        'host "app.example.com" is already claimed by route "other/web", which is older',
    )
    number, found, fix = first(healthy(admissions=(refused,)))
    assert number == 4
    assert found.startswith("route not admitted by router `router`: HostAlreadyClaimed")
    assert "other/web" in found and "older route" in fix


def test_no_router_of_a_sharded_setup_reports() -> None:
    routers = (router(name="shard-a"), router(name="shard-b"))
    number, found, fix = first(healthy(admissions=(), routers=routers, route_labels={"t": "x"}))
    assert number == 4
    assert "`shard-a`, `shard-b`" in found and "t=x" in found and "ROUTE_LABELS" in fix


def test_sharded_route_says_which_router_serves_it() -> None:
    routers = (router(name="shard-a"), router(name="shard-b"))
    admitted = (Admission("shard-b", True, host="app.example.com"),)
    report = diagnose_route(healthy(admissions=admitted, routers=routers))
    assert report.ok
    assert "`shard-b`" in report.checks[3].found
    assert "not in the shard of `shard-a`" in report.checks[3].found


def test_running_map_behind_the_files_is_an_older_configuration() -> None:
    number, found, _ = first(healthy(routers=(router(running="", reload_owed_seconds=12.4),)))
    assert number == 6
    assert found.startswith("HAProxy serves an older configuration")
    assert "reload owed since 12 s" in found


def test_reload_owed_too_long_fails_even_when_maps_agree() -> None:
    number, found, _ = first(healthy(routers=(router(reload_owed_seconds=90.0),)))
    assert number == 6 and "reload owed since 90 s" in found


def test_all_pods_unready_names_a_pod_and_its_reason() -> None:
    svc = BackendService(
        "web",
        True,
        {"app": "web"},
        (),
        (PodView("web-1", False, "connection refused"), PodView("web-2", False, "x")),
    )
    number, found, _ = first(healthy(services=(svc,)))
    assert number == 7
    assert found == "0 of 2 pods pass their readiness probe: pod `web-1`: connection refused"


def test_find_route_picks_longest_path_exact_host_and_older_route() -> None:
    a = route("a", "app.example.com", created="2026-01-01T00:00:00Z")
    b = route("b", "app.example.com", path="/api", created="2026-01-02T00:00:00Z")
    c = route("c", "app.example.com", created="2026-01-03T00:00:00Z")
    w = route("w", "any.example.com", wildcard=True)
    routes = [c, w, b, a]
    assert find_route(routes, "app.example.com", "/api/x") is b
    assert find_route(routes, "APP.example.com:8080", "/apix") is a  # older of equal keys
    assert find_route(routes, "other.example.com", "/") is w
    assert find_route(routes, "example.org", "/") is None


def test_request_key_and_longest_prefix_follow_haproxy_map_beg() -> None:
    entries = {"app.example.com/": "be_a", "app.example.com/api/": "be_b"}
    assert request_key("App.Example.com:80", "/api?q=1") == "app.example.com/api/"
    assert longest_prefix(entries, request_key("app.example.com", "/api")) == "be_b"
    assert longest_prefix(entries, request_key("app.example.com", "/apix")) == "be_a"
    assert longest_prefix(entries, request_key("b.example.com", "/")) == ""


def service(**changes: object) -> ServiceFacts:
    facts = ServiceFacts(
        namespace="ns",
        name="web",
        exists=True,
        cluster_ip="127.30.0.1",
        ports=(80,),
        selector={"app": "web"},
        ready=("web-1 127.10.0.2:8080",),
        not_ready=(),
        pods=(PodView("web-1", True, "ready"),),
        proxy_mode="userspace",
        proxy_where="pid 4242",
        proxy_problem="",
        proxy_running=True,
        proxy_ports=(PortRules(80, True, "listener on 127.30.0.1:80"),),
        dns_name="web.ns.svc.cluster.local",
        dns_server="127.0.0.1:5353",
        dns_answer=("127.30.0.1",),
        dns_error="",
        connection="",
    )
    return dataclasses.replace(facts, **changes)  # type: ignore[arg-type]


def test_service_checks_in_order() -> None:
    assert diagnose_service(service()).ok
    cases = [
        (service(cluster_ip=""), 1, "no spec.clusterIP"),
        (service(ready=(), pods=(PodView("web-1", False, "probe"),)), 2, "pod `web-1`: probe"),
        (service(proxy_mode="", proxy_problem="no service proxy has recorded"), 3, "recorded"),
        (
            service(proxy_ports=(PortRules(80, False, "no listener on 127.30.0.1:80"),)),
            3,
            "userspace mode (pid 4242): port 80: no listener on 127.30.0.1:80",
        ),
        (service(proxy_running=False, proxy_problem="pid 9 is not running"), 3, "not running"),
        (service(dns_answer=("127.30.0.9",)), 4, "not 127.30.0.1"),
        (service(connection="connection refused"), 5, "127.30.0.1:80: connection refused"),
    ]
    for facts, number, needle in cases:
        report = diagnose_service(facts)
        failed = report.first_failure
        assert failed is not None and report.checks.index(failed) + 1 == number, report.lines()
        assert needle in failed.found
