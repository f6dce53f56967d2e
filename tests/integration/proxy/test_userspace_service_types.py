"""User-space mode on loopback: node ports, external IPs, LB addresses, the internal
traffic policy, affinity on every address, and the refused external Local policy.

The proxy is node "n1"; endpoint b1 is on n1, b2 and b3 on "n2" (``nodeName``).
Addresses: ClusterIP 127.30.N.1, node ports on 127.0.0.1 (the default) and
127.40.N.1, external IP 127.50.N.5, LB address 127.51.N.6, all loopback.
"""

from __future__ import annotations

import logging
import random
from collections import Counter

import pytest
from tests.support.ports import free_port
from tests.support.proxy_cluster import endpoints, put, service, wait_until
from tests.support.proxy_peers import NamedBackend, who, who_udp

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.userspace import UserspaceConfig
from shiftnet.store import open_store

pytestmark = pytest.mark.integration


@pytest.fixture
async def env(tmp_path):  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    net = random.randint(1, 250)
    proxy = ServiceProxy(
        store,
        ProxyConfig(
            mode="userspace",
            node_name="n1",
            min_sync_interval=0.0,
            userspace=UserspaceConfig(
                connect_timeout=1.0, node_port_addresses=("127.0.0.1", f"127.40.{net}.1")
            ),
        ),
    )
    await proxy.start()
    port = free_port()
    backends = [await NamedBackend(f"b{i}", f"127.10.{net}.{i}", port).start() for i in (1, 2, 3)]
    try:
        yield {"client": Client(store), "proxy": proxy, "net": net, "backends": backends}
    finally:
        await proxy.stop()
        for b in backends:
            await b.stop()
        await store.close()


def typed(env, name: str, port: int, node_port: int, **spec: object) -> Service:  # type: ignore[no-untyped-def]
    affinity = spec.pop("affinity", None)
    protocol = str(spec.pop("protocol", "TCP"))
    svc = service(
        name, f"127.30.{env['net']}.1", port, affinity_timeout=affinity, protocol=protocol
    )  # type: ignore[arg-type]
    data = svc.to_dict()
    data["spec"]["ports"][0]["nodePort"] = node_port
    data["spec"]["type"] = "NodePort"
    status = spec.pop("status", None)
    data["spec"].update(spec)
    if status is not None:
        data["status"] = status
    return Service.model_validate(data)


async def serve(env, svc: Service) -> None:  # type: ignore[no-untyped-def]
    protocol = svc.spec.ports[0].protocol
    eps = endpoints(
        svc.metadata.name, [(b.host, b.port) for b in env["backends"]], protocol=protocol
    )
    for addr in eps.subsets[0].addresses:
        addr.node_name = "n1" if addr.ip.endswith(".1") else "n2"
    await put(env["client"], svc)
    await put(env["client"], eps)
    proxy, name = env["proxy"], svc.metadata.name
    want = {
        "affinity": svc.spec.session_affinity == "ClientIP",
        "internal_local": svc.spec.internal_traffic_policy == "Local",
        "external_local": svc.spec.external_traffic_policy == "Local",
    }

    def synced() -> bool:
        entries = proxy.table.for_service("default", name)
        listeners = sum(1 for k in proxy.userspace.external if k[0].name == name)
        bound = [proxy.userspace.services.get(e.id) for e in entries]
        return (
            bool(entries)
            and len(entries[0].backends) == 3
            and all(getattr(entries[0], k) == v for k, v in want.items())
            and all(
                b is not None and b.entry.affinity == e.affinity
                for b, e in zip(bound, entries, strict=True)
            )
            and listeners == expected_listeners(svc)
        )

    await wait_until(synced, what="service synced")


def expected_listeners(svc: Service) -> int:
    if svc.spec.external_traffic_policy == "Local":
        return 0
    lb = len(svc.status.load_balancer.ingress) if svc.spec.type == "LoadBalancer" else 0
    return 2 + len(svc.spec.external_ips) + lb  # node port on two addresses


async def spread(host: str, port: int, n: int) -> Counter[str]:
    return Counter([await who(host, port) for _ in range(n)])


async def test_node_port_external_ip_and_lb_address_reach_every_endpoint(env) -> None:  # type: ignore[no-untyped-def]
    net, port, node_port = env["net"], free_port(), free_port()
    svc = typed(
        env,
        "web",
        port,
        node_port,
        type="LoadBalancer",
        externalIPs=[f"127.50.{net}.5"],
        status={"loadBalancer": {"ingress": [{"ip": f"127.51.{net}.6"}]}},
    )
    await serve(env, svc)
    for host, p in (
        ("127.0.0.1", node_port),
        (f"127.40.{net}.1", node_port),
        (f"127.50.{net}.5", port),
        (f"127.51.{net}.6", port),
    ):
        assert set(await spread(host, p, 30)) == {"b1", "b2", "b3"}, host
    # the type goes back to ClusterIP: every external listener closes
    await put(env["client"], service("web", f"127.30.{net}.1", port))
    await wait_until(lambda: not env["proxy"].userspace.external, what="listeners closed")
    with pytest.raises(OSError):
        await who("127.0.0.1", node_port)


async def test_udp_node_port(env) -> None:  # type: ignore[no-untyped-def]
    node_port = free_port(kind=2)
    await serve(env, typed(env, "dns", env["backends"][0].port, node_port, protocol="UDP"))
    replies = {
        (await who_udp("127.0.0.1", node_port, b"q%d" % i)).split(b":")[0] for i in range(30)
    }
    assert replies == {b"b1", b"b2", b"b3"}


async def test_internal_policy_local_and_affinity_on_the_node_port(env) -> None:  # type: ignore[no-untyped-def]
    net, port, node_port = env["net"], free_port(), free_port()
    await serve(env, typed(env, "itp", port, node_port, internalTrafficPolicy="Local"))
    assert await spread(f"127.30.{net}.1", port, 20) == {"b1": 20}
    assert set(await spread("127.0.0.1", node_port, 30)) == {"b1", "b2", "b3"}
    await serve(env, typed(env, "itp", port, node_port, affinity=60))
    sticky = Counter([await who("127.0.0.1", node_port, source="127.0.0.9") for _ in range(30)])
    assert len(sticky) == 1, sticky
    # one affinity per service port: the ClusterIP and the other node address keep it. A
    # stranger between two clients moves the rotation by one, so separate balancers
    # could not agree on both clients.
    vip = f"127.30.{net}.1"
    for i, src in enumerate(("127.0.0.11", "127.0.0.12")):
        pinned = await who("127.0.0.1", node_port, source=src)
        assert await who(vip, port, source=src) == pinned
        assert await who(f"127.40.{net}.1", node_port, source=src) == pinned
        await who(vip, port, source=f"127.0.0.{21 + i}")


async def test_external_policy_local_is_refused_not_ignored(env, caplog) -> None:  # type: ignore[no-untyped-def]
    net, port, node_port = env["net"], free_port(), free_port()
    caplog.set_level(logging.ERROR, logger="shiftnet.proxy.userspace")
    await serve(env, typed(env, "etp", port, node_port, externalTrafficPolicy="Local"))
    proxy = env["proxy"]
    await wait_until(lambda: bool(proxy.userspace.refused), what="refusal")
    (message,) = proxy.userspace.refused.values()
    assert message.startswith('Service "default/etp": spec.externalTrafficPolicy: Local')
    assert message in caplog.text
    with pytest.raises(OSError):
        await who("127.0.0.1", node_port)
    assert set(await spread(f"127.30.{net}.1", port, 30)) == {"b1", "b2", "b3"}
