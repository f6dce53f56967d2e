"""Endpoints controller on real stores: Endpoints follow pods, labels and readiness."""

from __future__ import annotations

import pytest
from tests.support.master import eventually, pod, running_master, service
from tests.support.stores import etcd_server, store_url  # noqa: F401

from shiftnet.api import Endpoints, Pod, Service, parse_object
from shiftnet.client import Client

pytestmark = pytest.mark.integration

WEB_PORTS = [{"name": "web", "containerPort": 8080}]


async def endpoints(client: Client, name: str, ns: str = "default") -> dict[str, list[str]]:
    ep = await client.try_get(Endpoints, ns, name)
    if ep is None:
        return {"missing": []}
    out: dict[str, list[str]] = {"ready": [], "not_ready": [], "ports": []}
    for s in ep.subsets:
        out["ready"] += [a.ip for a in s.addresses]
        out["not_ready"] += [a.ip for a in s.not_ready_addresses]
        out["ports"] += [f"{p.name or ''}:{p.port}" for p in s.ports]
    return out


async def set_pod(client: Client, name: str, fn) -> None:  # type: ignore[no-untyped-def]
    def change(p: Pod) -> Pod:
        fn(p)
        return p

    await client.mutate(Pod, "default", name, change)


async def test_endpoints_follow_pods_labels_and_readiness(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(
            service(
                "web",
                selector={"app": "web"},
                ports=[{"name": "http", "port": 80, "targetPort": "web"}],
            )
        )
        for i, ready in ((1, True), (2, True), (3, False)):
            await client.create(
                pod(
                    f"web-{i}",
                    f"127.10.0.{i + 1}",
                    labels={"app": "web"},
                    ready=ready,
                    ports=WEB_PORTS,
                )
            )
        await client.create(pod("other", "127.10.0.9", labels={"app": "db"}, ports=WEB_PORTS))
        await client.create(pod("pending", None, labels={"app": "web"}, ports=WEB_PORTS))
        got = await eventually(
            lambda: endpoints(client, "web"),
            lambda e: (
                (e.get("ready"), e.get("not_ready"))
                == (["127.10.0.2", "127.10.0.3"], ["127.10.0.4"])
            ),
        )
        assert got["ports"] == ["http:8080"]  # targetPort "web" resolved by container port name

        ep = await client.get(Endpoints, "default", "web")
        addr = ep.subsets[0].addresses[0]
        assert addr.target_ref is not None and addr.target_ref.kind == "Pod"
        assert addr.target_ref.name == "web-1" and addr.node_name == "node-a"

        # readiness flips: addresses <-> notReadyAddresses
        await set_pod(client, "web-3", lambda p: setattr(p.status.conditions[0], "status", "True"))
        await set_pod(client, "web-1", lambda p: setattr(p.status.conditions[0], "status", "False"))
        await eventually(
            lambda: endpoints(client, "web"),
            lambda e: (
                (e.get("ready"), e.get("not_ready"))
                == (["127.10.0.3", "127.10.0.4"], ["127.10.0.2"])
            ),
        )

        # a label change takes the pod out; the pending pod gets an IP and comes in
        await set_pod(client, "web-2", lambda p: p.metadata.labels.update(app="gone"))
        await set_pod(client, "pending", lambda p: setattr(p.status, "pod_ip", "127.10.0.7"))
        await eventually(
            lambda: endpoints(client, "web"),
            lambda e: (
                (e.get("ready"), e.get("not_ready"))
                == (["127.10.0.4", "127.10.0.7"], ["127.10.0.2"])
            ),
        )

        # someone else overwriting the Endpoints gets them put back
        def vandalise(ep: Endpoints) -> Endpoints:
            ep.subsets = []
            return ep

        await client.mutate(Endpoints, "default", "web", vandalise)
        await eventually(
            lambda: endpoints(client, "web"),
            lambda e: e.get("ready") == ["127.10.0.4", "127.10.0.7"],
        )

        # deleting a pod removes it; deleting the Service removes the Endpoints
        await client.delete(Pod, "default", "web-1")
        await eventually(lambda: endpoints(client, "web"), lambda e: e.get("not_ready") == [])
        await client.delete(Service, "default", "web")
        await eventually(lambda: endpoints(client, "web"), lambda e: "missing" in e)


async def test_numeric_target_port_and_pods_without_the_named_port(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(
            service(
                "multi",
                selector={"app": "m"},
                ports=[
                    {"name": "a", "port": 80, "targetPort": 9000},
                    {"name": "b", "port": 81, "targetPort": "metrics"},
                ],
            )
        )
        await client.create(
            pod(
                "m1",
                "127.10.0.2",
                labels={"app": "m"},
                ports=[{"name": "metrics", "containerPort": 9100}],
            )
        )
        await client.create(pod("m2", "127.10.0.3", labels={"app": "m"}))
        ep = await eventually(
            lambda: client.try_get(Endpoints, "default", "multi"),
            lambda e: e is not None and sum(len(s.addresses) for s in e.subsets) == 2,
        )
    by_ip = {
        a.ip: sorted(f"{p.name}:{p.port}" for p in s.ports) for s in ep.subsets for a in s.addresses
    }
    assert by_ip == {"127.10.0.2": ["a:9000", "b:9100"], "127.10.0.3": ["a:9000"]}


async def test_selectorless_service_keeps_user_endpoints(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(service("external", ports=[{"port": 5432}]))
        user = parse_object(
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "external", "namespace": "default"},
                "subsets": [{"addresses": [{"ip": "127.0.0.5"}], "ports": [{"port": 5432}]}],
            }
        )
        written = await client.create(user)
        # a selector Service next to it shows the controller is running
        await client.create(service("marker", selector={"app": "x"}))
        await client.create(pod("x", "127.10.0.2", labels={"app": "x"}))
        await eventually(
            lambda: endpoints(client, "marker"), lambda e: e.get("ready") == ["127.10.0.2"]
        )
        kept = await client.get(Endpoints, "default", "external")
    assert kept.to_dict() == written.to_dict()


async def test_hostname_for_subdomain_and_namespace_isolation(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(service("db", selector={"app": "db"}, cluster_ip="None"))
        await client.create(
            pod("db-0", "127.10.0.2", labels={"app": "db"}, hostname="db-0", subdomain="db")
        )
        await client.create(pod("db-x", "127.10.0.3", ns="other", labels={"app": "db"}))
        ep = await eventually(
            lambda: client.try_get(Endpoints, "default", "db"),
            lambda e: e is not None and bool(e.subsets),
        )
    assert [(a.ip, a.hostname) for a in ep.subsets[0].addresses] == [("127.10.0.2", "db-0")]


async def test_restart_deletes_own_leftovers_but_not_user_endpoints(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(service("gone", selector={"app": "g"}))
        await client.create(pod("g", "127.10.0.2", labels={"app": "g"}))
        await eventually(
            lambda: endpoints(client, "gone"), lambda e: e.get("ready") == ["127.10.0.2"]
        )
        user = parse_object(
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "mine", "namespace": "default"},
                "subsets": [{"addresses": [{"ip": "127.0.0.5"}], "ports": [{"port": 80}]}],
            }
        )
        await client.create(user)
    # the Service goes while no master runs
    from shiftnet.store import open_store

    store = open_store(store_url)
    try:
        await Client(store).delete(Service, "default", "gone")
    finally:
        await store.close()
    async with running_master(store_url) as (_, client):
        await eventually(lambda: endpoints(client, "gone"), lambda e: "missing" in e)
        assert (await endpoints(client, "mine"))["ready"] == ["127.0.0.5"]
