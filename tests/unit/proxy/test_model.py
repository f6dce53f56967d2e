"""The service table: pure, deterministic, bad services reported and skipped."""

from __future__ import annotations

from tests.support.proxy_cluster import endpoints, service

from shiftnet.proxy.changes import ProxyChanges
from shiftnet.proxy.model import Backend, build_service_table, diff_tables


def test_ready_endpoints_only_and_sorted() -> None:
    ep = endpoints("web", [("10.1.0.3", 80), ("10.1.0.1", 80)])
    ep.subsets[0].not_ready_addresses.append(type(ep.subsets[0].addresses[0])(ip="10.1.0.9"))
    table = build_service_table([service("web", "172.30.0.1", 80)], [ep])
    (entry,) = table.entries.values()
    assert entry.backends == (Backend("10.1.0.1", 80), Backend("10.1.0.3", 80))
    assert entry.cluster_ip == "172.30.0.1" and entry.protocol == "TCP"
    assert not entry.affinity and entry.affinity_timeout == 10800


def test_affinity_timeout_and_default() -> None:
    table = build_service_table([service("s", "172.30.0.1", 80, affinity_timeout=5)], [])
    (entry,) = table.entries.values()
    assert entry.affinity and entry.affinity_timeout == 5 and entry.backends == ()


def test_deterministic_regardless_of_input_order() -> None:
    svcs = [service(f"s{i}", f"172.30.0.{i + 1}", 80) for i in range(20)]
    eps = [endpoints(f"s{i}", [("10.1.0.1", 8000 + i)]) for i in range(20)]
    a = build_service_table(svcs, eps)
    b = build_service_table(list(reversed(svcs)), list(reversed(eps)))
    assert a == b and list(a.entries) == sorted(a.entries)


def test_bad_cluster_ip_reported_not_fatal() -> None:
    bad = service("bad", "172.30.0.1", 80)
    bad.spec.cluster_ip = "not-an-ip"
    table = build_service_table([bad, service("good", "172.30.0.2", 80)], [])
    assert [e.id.name for e in table.entries.values()] == ["good"]
    (problem,) = table.problems
    assert problem.name == "bad" and problem.field == "spec.clusterIP"
    assert 'Service "default/bad"' in str(problem)


def test_headless_and_external_name_skipped_silently() -> None:
    headless = service("h", "None", 80)
    table = build_service_table([headless], [])
    assert not table.entries and not table.problems


def test_vip_conflict_first_wins() -> None:
    table = build_service_table(
        [service("b", "172.30.0.1", 80), service("a", "172.30.0.1", 80)], []
    )
    assert [e.id.name for e in table.entries.values()] == ["a"]
    assert table.problems[0].name == "b" and "already used" in table.problems[0].message


def test_port_name_must_match_endpoint_port_name() -> None:
    svc = service("web", "172.30.0.1", 80, extra_ports=[{"name": "metrics", "port": 9100}])
    table = build_service_table([svc], [endpoints("web", [("10.1.0.1", 8080)])])
    by_port = {e.id.port: e for e in table.entries.values()}
    assert by_port["main"].backends == (Backend("10.1.0.1", 8080),)
    assert by_port["metrics"].backends == ()


def test_diff_and_changes_tracker_only_dirty_services() -> None:
    svcs = {("default", f"s{i}"): service(f"s{i}", f"172.30.0.{i + 1}", 80) for i in range(5)}
    eps = {("default", f"s{i}"): endpoints(f"s{i}", [("10.1.0.1", 80)]) for i in range(5)}
    changes = ProxyChanges()
    for key in svcs:
        changes.mark(*key)
    table, diff = changes.take(lambda ns, n: svcs.get((ns, n)), lambda ns, n: eps.get((ns, n)))
    assert len(table.entries) == 5
    assert len(diff.added) == 5 and not diff.removed and not diff.changed
    eps[("default", "s2")] = endpoints("s2", [("10.1.0.2", 80)])
    del svcs[("default", "s4")]
    changes.mark("default", "s2")
    changes.mark("default", "s4")
    table2, diff2 = changes.take(lambda ns, n: svcs.get((ns, n)), lambda ns, n: eps.get((ns, n)))
    assert [o.id.name for o, _ in diff2.changed] == ["s2"]
    assert [e.id.name for e in diff2.removed] == ["s4"]
    assert diff_tables(table2, table2).empty


def test_changes_tracker_resolves_vip_conflicts_like_the_full_build() -> None:
    svcs = {
        ("default", "b"): service("b", "172.30.0.1", 80),
        ("default", "c"): service("c", "172.30.0.2", 80),
    }
    changes = ProxyChanges()

    def take():  # type: ignore[no-untyped-def]
        return changes.take(lambda ns, n: svcs.get((ns, n)), lambda ns, n: None)

    for key in svcs:
        changes.mark(*key)
    take()
    # "a" claims b's VIP and sorts first: it wins, b is reported
    svcs[("default", "a")] = service("a", "172.30.0.1", 80)
    changes.mark("default", "a")
    table, diff = take()
    assert {e.id.name for e in table.entries.values()} == {"a", "c"}
    assert [p.name for p in table.problems] == ["b"]
    assert table.entries.keys() == build_service_table(svcs.values(), []).entries.keys()
    # "a" goes away: b gets its VIP back without being marked itself
    del svcs[("default", "a")]
    changes.mark("default", "a")
    table, diff = take()
    assert {e.id.name for e in table.entries.values()} == {"b", "c"}
    assert not table.problems
    assert [e.id.name for e in diff.added] == ["b"] and [e.id.name for e in diff.removed] == ["a"]
