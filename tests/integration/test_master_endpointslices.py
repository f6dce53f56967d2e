"""EndpointSlice controller on real stores: slices beside Endpoints, split at 100, terminating."""

from __future__ import annotations

import pytest
from tests.support.master import eventually, pod, running_master, service
from tests.support.stores import etcd_server, store_url  # noqa: F401

from shiftnet.api import Endpoints, EndpointSlice, Pod, Service
from shiftnet.client import Client

pytestmark = pytest.mark.integration

WEB = [{"name": "web", "containerPort": 8080}]
PORTS = [{"name": "http", "port": 80, "targetPort": "web"}]


async def slices(client: Client, name: str = "web") -> list[EndpointSlice]:
    found = await client.list(EndpointSlice, "default", f"kubernetes.io/service-name={name}")
    return sorted(found, key=lambda s: s.name)


def conditions(found: list[EndpointSlice]) -> dict[str, tuple[bool, bool, bool]]:
    return {
        e.addresses[0]: (
            e.conditions.is_ready,
            e.conditions.is_serving,
            e.conditions.is_terminating,
        )
        for s in found
        for e in s.endpoints
    }


async def test_slices_follow_pods_and_split_at_100(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(service("web", selector={"app": "web"}, ports=PORTS))
        [placeholder] = await eventually(lambda: slices(client), lambda s: len(s) == 1, timeout=30)
        assert placeholder.name.startswith("web-") and placeholder.endpoints == []
        for i in range(130):
            await client.create(
                pod(f"w{i}", f"127.10.{i // 200}.{i % 200 + 2}", labels={"app": "web"}, ports=WEB)
            )
        found = await eventually(
            lambda: slices(client),
            lambda s: sum(len(x.endpoints) for x in s) == 130,
            timeout=90,  # 130 pod writes first: a loaded machine and the kube store are slow
        )
        assert sorted(len(s.endpoints) for s in found) == [30, 100]
        assert all(s.name.startswith("web-") and len(s.name) == 9 for s in found)
        svc_uid = (await client.get(Service, "default", "web")).metadata.uid
        for s in found:
            [owner] = s.metadata.owner_references or []
            assert (owner.kind, owner.name, owner.uid) == ("Service", "web", svc_uid)
        await eventually(  # Endpoints kept beside
            lambda: client.get(Endpoints, "default", "web"),
            lambda ep: sum(len(s.addresses) for s in ep.subsets) == 130,
            timeout=30,
        )
        await client.delete(Service, "default", "web")
        await eventually(lambda: slices(client), lambda s: s == [], timeout=30)


async def test_a_terminating_pod_is_serving_terminating_and_leaves_endpoints(
    store_url,  # noqa: F811
) -> None:
    async with running_master(store_url) as (_, client):
        await client.create(service("web", selector={"app": "web"}, ports=PORTS))
        for i in (1, 2):
            await client.create(pod(f"w{i}", f"127.10.0.{i + 1}", labels={"app": "web"}, ports=WEB))
        await eventually(lambda: slices(client), lambda s: len(conditions(s)) == 2)

        def deleting(p: Pod) -> Pod:
            p.metadata.deletion_timestamp = "2030-01-01T00:00:30Z"  # as the API server marks it
            return p

        await client.mutate(Pod, "default", "w1", deleting)
        found = await eventually(
            lambda: slices(client), lambda s: conditions(s).get("127.10.0.2", (0, 0, 0))[2]
        )
        assert conditions(found) == {
            "127.10.0.2": (False, True, True),
            "127.10.0.3": (True, True, False),
        }

        async def ready_ips() -> list[str]:
            ep = await client.get(Endpoints, "default", "web")
            return [a.ip for s in ep.subsets for a in s.addresses]

        await eventually(ready_ips, lambda ips: ips == ["127.10.0.3"])
        await client.delete(Pod, "default", "w1")  # no node: removed at once
        await eventually(lambda: slices(client), lambda s: list(conditions(s)) == ["127.10.0.3"])


async def test_user_written_slices_are_left_alone(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(service("web", selector={"app": "web"}, ports=PORTS))
        mine = EndpointSlice.model_validate(
            {
                "metadata": {
                    "name": "web-by-hand",
                    "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "web"},
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.9.9.9"]}],
            }
        )
        await client.create(mine)
        await client.create(pod("w1", "127.10.0.2", labels={"app": "web"}, ports=WEB))
        await eventually(lambda: slices(client), lambda s: len(conditions(s)) == 2)
        await client.delete(Service, "default", "web")
        left = await eventually(lambda: slices(client), lambda s: len(s) == 1)
        assert left[0].name == "web-by-hand"
