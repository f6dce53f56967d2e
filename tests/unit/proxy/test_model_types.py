"""The service table's external side: node ports, external IPs, LB addresses, policies."""

from __future__ import annotations

from tests.support.proxy_cluster import endpoints, service

from shiftnet.api import Endpoints, Service
from shiftnet.proxy.changes import ProxyChanges
from shiftnet.proxy.model import Backend, build_service_table


def typed(name: str, ip: str, node_port: int | None, **spec: object) -> Service:
    svc = service(name, ip, 80)
    data = svc.to_dict()
    data["spec"]["ports"][0]["nodePort"] = node_port
    data["spec"].update(spec)
    status = data["spec"].pop("status", None)
    if status is not None:
        data["status"] = status
    return Service.model_validate(data)


def on_nodes(name: str, placed: dict[str, str]) -> Endpoints:
    """Endpoints at port 8080 with each address's nodeName."""
    eps = endpoints(name, [(ip, 8080) for ip in placed])
    for addr in eps.subsets[0].addresses:
        addr.node_name = placed[addr.ip]
    return eps


def test_node_port_external_and_balancer_addresses() -> None:
    svc = typed(
        "web",
        "172.30.0.1",
        30080,
        type="LoadBalancer",
        externalIPs=["192.0.2.9", "192.0.2.1"],
        status={"loadBalancer": {"ingress": [{"ip": "198.51.100.5"}, {"hostname": "lb"}]}},
    )
    (entry,) = build_service_table([svc], []).entries.values()
    assert entry.node_port == 30080
    assert entry.external_ips == ("192.0.2.1", "192.0.2.9")
    assert entry.load_balancer_ips == ("198.51.100.5",)
    assert entry.external_vips == (
        ("*", "TCP", 30080),
        ("192.0.2.1", "TCP", 80),
        ("192.0.2.9", "TCP", 80),
        ("198.51.100.5", "TCP", 80),
    )


def test_cluster_ip_type_serves_no_node_port_nor_balancer_address() -> None:
    svc = typed(
        "web",
        "172.30.0.1",
        30080,
        status={"loadBalancer": {"ingress": [{"ip": "198.51.100.5"}]}},
    )
    (entry,) = build_service_table([svc], []).entries.values()
    assert entry.node_port == 0 and entry.load_balancer_ips == ()
    assert entry.external_vips == ()


def test_local_policies_choose_this_nodes_backends() -> None:
    svc = typed(
        "web",
        "172.30.0.1",
        30080,
        type="NodePort",
        externalTrafficPolicy="Local",
        internalTrafficPolicy="Local",
    )
    eps = on_nodes("web", {"10.1.0.1": "n1", "10.1.0.2": "n2", "10.1.0.3": "n1"})
    (entry,) = build_service_table([svc], [eps], node_name="n1").entries.values()
    local = (Backend("10.1.0.1", 8080), Backend("10.1.0.3", 8080))
    assert entry.local_backends == local
    assert entry.cluster_backends == local and entry.external_backends == local
    assert len(entry.backends) == 3
    (cluster,) = build_service_table(
        [typed("web", "172.30.0.1", 30080, type="NodePort")], [eps], node_name="n1"
    ).entries.values()
    assert cluster.cluster_backends == cluster.external_backends == cluster.backends
    (elsewhere,) = build_service_table([svc], [eps], node_name="n3").entries.values()
    assert elsewhere.external_backends == () and elsewhere.cluster_backends == ()


def test_bad_policy_and_external_ip_are_problems() -> None:
    bad_policy = typed("a", "172.30.0.1", None, internalTrafficPolicy="Nearby")
    bad_ip = typed("b", "172.30.0.2", None, externalIPs=["192.0.2.01", "192.0.2.2"])
    table = build_service_table([bad_policy, bad_ip], [])
    assert [(p.name, p.field) for p in table.problems] == [
        ("a", "spec.internalTrafficPolicy"),
        ("b", "spec.externalIPs[0]"),
    ]
    (entry,) = table.entries.values()
    assert entry.id.name == "b" and entry.external_ips == ("192.0.2.2",)


def test_node_port_and_external_ip_conflicts_first_wins_in_both_builds() -> None:
    svcs = {
        ("default", "b"): typed("b", "172.30.0.2", 30080, type="NodePort"),
        ("default", "c"): typed("c", "172.30.0.3", None, externalIPs=["192.0.2.1"]),
    }
    changes = ProxyChanges()

    def take():  # type: ignore[no-untyped-def]
        return changes.take(lambda ns, n: svcs.get((ns, n)), lambda ns, n: None)

    for key in svcs:
        changes.mark(*key)
    take()
    svcs[("default", "a")] = typed(
        "a", "172.30.0.1", 30080, type="NodePort", externalIPs=["192.0.2.1"]
    )
    changes.mark("default", "a")
    table, _ = take()
    full = build_service_table(svcs.values(), [])
    assert (
        {e.id.name for e in table.entries.values()}
        == {"a"}
        == {e.id.name for e in full.entries.values()}
    )
    assert {(p.name, p.field) for p in table.problems} == {
        ("b", "spec.ports.nodePort"),
        ("c", "spec.externalIPs"),
    }
    assert "node port 30080/TCP is already used by default/a:main/TCP" in str(table.problems[0])
    del svcs[("default", "a")]
    changes.mark("default", "a")
    table, diff = take()
    assert {e.id.name for e in table.entries.values()} == {"b", "c"} and not table.problems
    assert sorted(e.id.name for e in diff.added) == ["b", "c"]


def test_an_external_address_never_takes_another_services_cluster_ip() -> None:
    """A tenant names a good Service's ClusterIP:port as its external IP or LB address;
    the tenant sorts first, and writes before or after: the ClusterIP stays the good one's."""
    good = service("web", "172.30.0.10", 80)
    hostile = {
        ("a", "ext"): typed("ext", "172.30.0.20", None, externalIPs=["172.30.0.10"]),
        ("a", "lb"): typed(
            "lb",
            "172.30.0.21",
            None,
            type="LoadBalancer",
            status={"loadBalancer": {"ingress": [{"ip": "172.30.0.10"}]}},
        ),
    }
    for key, svc in hostile.items():
        svc.metadata.namespace = key[0]
    full = build_service_table([*hostile.values(), good], [])
    svcs: dict[tuple[str, str], Service] = {}
    for first_good in (True, False):
        svcs.clear()
        changes = ProxyChanges()
        order = [{("default", "web"): good}, hostile]
        for batch in order if first_good else order[::-1]:
            svcs.update(batch)
            for key in batch:
                changes.mark(*key)
            table, _ = changes.take(lambda ns, n: svcs.get((ns, n)), lambda ns, n: None)
        for built in (table, full):
            assert {e.id.name for e in built.entries.values()} == {"web"}
            assert {(p.name, p.field) for p in built.problems} == {
                ("ext", "spec.externalIPs"),
                ("lb", "status.loadBalancer.ingress"),
            }


def test_unspecified_broadcast_and_multicast_addresses_are_not_proxied() -> None:
    """A user-space listener on 0.0.0.0:80 takes port 80 on every address, the other
    ClusterIPs' included: such addresses (written around validation) are problems."""
    for ip in ("0.0.0.0", "255.255.255.255", "224.0.0.1", "239.1.2.3"):
        svcs = [
            service("vip", ip, 80),
            typed("ext", "172.30.0.2", None, externalIPs=[ip]),
            typed(
                "lb",
                "172.30.0.3",
                None,
                type="LoadBalancer",
                status={"loadBalancer": {"ingress": [{"ip": ip}]}},
            ),
        ]
        table = build_service_table(svcs, [])
        assert sorted(e.id.name for e in table.entries.values()) == ["ext", "lb"]
        assert all(not e.external_vips for e in table.entries.values())
        assert {(p.name, p.field) for p in table.problems} == {
            ("vip", "spec.clusterIP"),
            ("ext", "spec.externalIPs[0]"),
            ("lb", "status.loadBalancer.ingress[0].ip"),
        }, ip
