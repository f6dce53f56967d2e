"""ClusterIP allocator on real stores (SQLite file and a real etcd)."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest
from tests.support.master import eventually, running_master, service
from tests.support.stores import etcd_server, store_url  # noqa: F401

from shiftnet.api import Service
from shiftnet.errors import AllocationError
from shiftnet.master import MasterConfig, check_service_request
from shiftnet.master.clusterip import ERROR_ANNOTATION, REQUESTED_ANNOTATION

pytestmark = pytest.mark.integration


def only_written_straight_to_the_store(url: str) -> None:
    """These tests write what only a direct store write can hold: a taken, changed or
    impossible ClusterIP request, or two claims ordered within one second. Through a
    Kubernetes API the API server refuses such a request at create or update, as
    Kubernetes does (tests/integration/apiserver test that), and creationTimestamp
    has whole seconds, so the master never sees them there."""
    if url.startswith("kube://"):
        pytest.skip("the API server refuses this request itself; see the docstring")


SMALL = MasterConfig.build(service_network="127.31.0.0/29")  # 6 usable addresses


async def ips(client) -> dict[str, str | None]:
    return {s.name: s.spec.cluster_ip for s in await client.list(Service)}


def all_allocated(n: int):
    return lambda m: len(m) == n and all(m.values())


async def test_300_concurrent_services_get_distinct_ips_and_keep_them(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        # 300 creates in flight at once, capped at 100 per connection: the etcd backend's
        # HTTP pool holds 100 connections and a loaded machine can time out the rest
        gate = asyncio.Semaphore(100)

        async def create(i: int) -> None:
            async with gate:
                await client.create(service(f"s{i:03d}"))

        await asyncio.gather(*(create(i) for i in range(300)))
        got = await eventually(lambda: ips(client), all_allocated(300), timeout=60)
    values = list(got.values())
    assert len(set(values)) == 300
    net = ipaddress.ip_network("127.30.0.0/16")
    assert all(ipaddress.ip_address(v) in net for v in values)

    # a restarted master keeps every address, and a new Service gets a fresh one
    async with running_master(store_url) as (_, client):
        await client.create(service("after-restart"))
        again = await eventually(lambda: ips(client), all_allocated(301), timeout=30)
    assert {k: again[k] for k in got} == got
    assert again["after-restart"] not in values


async def test_requested_ip_honoured_and_duplicate_gets_clear_error(store_url) -> None:  # noqa: F811
    only_written_straight_to_the_store(store_url)
    async with running_master(store_url) as (_, client):
        await client.create(service("first", cluster_ip="127.30.5.5"))
        await eventually(
            lambda: client.get(Service, "default", "first"),
            lambda s: (
                s.spec.cluster_ip == "127.30.5.5"
                and ERROR_ANNOTATION not in s.metadata.annotations
                and s.metadata.resource_version != ""
            ),
        )
        # the CLI's up-front check refuses the duplicate before anything is written
        with pytest.raises(AllocationError, match="provided IP is already allocated"):
            await check_service_request(client, service("dup", cluster_ip="127.30.5.5"))
        with pytest.raises(AllocationError, match="not in the valid range"):
            await check_service_request(client, service("far", cluster_ip="10.9.9.9"))
        await check_service_request(client, service("free", cluster_ip="127.30.5.6"))

        # written anyway (an older client): the master reports it on the Service
        await client.create(service("dup", cluster_ip="127.30.5.5"))
        dup = await eventually(
            lambda: client.get(Service, "default", "dup"),
            lambda s: ERROR_ANNOTATION in s.metadata.annotations,
        )
        msg = dup.metadata.annotations[ERROR_ANNOTATION]
        assert 'Service "default/dup" is invalid: spec.clusterIP' in msg
        assert "provided IP is already allocated" in msg
        assert dup.spec.cluster_ip is None  # never two Services on one address
        assert dup.metadata.annotations[REQUESTED_ANNOTATION] == "127.30.5.5"

        await client.create(service("far", cluster_ip="10.9.9.9"))
        far = await eventually(
            lambda: client.get(Service, "default", "far"),
            lambda s: ERROR_ANNOTATION in s.metadata.annotations,
        )
        assert "provided IP is not in the valid range" in far.metadata.annotations[ERROR_ANNOTATION]
        assert "127.30.0.0/16" in far.metadata.annotations[ERROR_ANNOTATION]

        # the holder goes: the waiting duplicate gets exactly the address it asked for
        await client.delete(Service, "default", "first")
        healed = await eventually(
            lambda: client.get(Service, "default", "dup"),
            lambda s: s.spec.cluster_ip == "127.30.5.5",
        )
        assert ERROR_ANNOTATION not in healed.metadata.annotations


async def test_headless_and_external_name_left_alone(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        await client.create(service("headless", cluster_ip="None", selector={"a": "b"}))
        await client.create(service("ext", type="ExternalName", external_name="example.com"))
        await client.create(service("marker"))
        await eventually(lambda: ips(client), lambda m: bool(m.get("marker")))
        got = {s.name: s for s in await client.list(Service)}
    assert got["headless"].spec.cluster_ip == "None"
    assert got["ext"].spec.cluster_ip is None
    assert not got["headless"].metadata.annotations and not got["ext"].metadata.annotations


async def test_full_range_then_release(store_url) -> None:  # noqa: F811
    only_written_straight_to_the_store(store_url)
    async with running_master(store_url, SMALL) as (_, client):
        for i in range(6):
            await client.create(service(f"s{i}"))
        await eventually(lambda: ips(client), all_allocated(6))
        with pytest.raises(AllocationError, match=r"127\.31\.0\.0/29: range is full"):
            await check_service_request(client, service("seventh"))
        await client.create(service("seventh"))
        seventh = await eventually(
            lambda: client.get(Service, "default", "seventh"),
            lambda s: ERROR_ANNOTATION in s.metadata.annotations,
        )
        assert "range is full" in seventh.metadata.annotations[ERROR_ANNOTATION]
        freed = (await client.get(Service, "default", "s2")).spec.cluster_ip
        await client.delete(Service, "default", "s2")
        healed = await eventually(
            lambda: client.get(Service, "default", "seventh"),
            lambda s: bool(s.spec.cluster_ip),
        )
    assert healed.spec.cluster_ip == freed
    assert ERROR_ANNOTATION not in healed.metadata.annotations


async def test_reapply_without_ip_keeps_address_and_change_is_refused(store_url) -> None:  # noqa: F811
    only_written_straight_to_the_store(store_url)
    async with running_master(store_url) as (_, client):
        await client.create(service("web"))
        web = await eventually(
            lambda: client.get(Service, "default", "web"), lambda s: bool(s.spec.cluster_ip)
        )
        ip = web.spec.cluster_ip
        # `apply` of the original manifest (no clusterIP) must not lose the address
        web.spec.cluster_ip = None
        web.spec.cluster_ips = None
        await client.update(web)
        await eventually(
            lambda: client.get(Service, "default", "web"), lambda s: s.spec.cluster_ip == ip
        )
        with pytest.raises(AllocationError, match="immutable"):
            await check_service_request(client, service("web", cluster_ip="127.30.9.9"))

        # written anyway: the address is put back and the refusal stays on the Service
        web = await client.get(Service, "default", "web")
        web.spec.cluster_ip = "127.30.9.9"
        web.spec.cluster_ips = ["127.30.9.9"]
        await client.update(web)
        refused = await eventually(
            lambda: client.get(Service, "default", "web"),
            lambda s: s.spec.cluster_ip == ip and ERROR_ANNOTATION in s.metadata.annotations,
        )
        assert "field is immutable" in refused.metadata.annotations[ERROR_ANNOTATION]
        await asyncio.sleep(0.3)  # the master's own write comes back as an event: no flapping
        again = await client.get(Service, "default", "web")
        assert again.metadata.annotations == refused.metadata.annotations
        assert again.metadata.resource_version == refused.metadata.resource_version


async def test_claims_written_while_master_was_down_oldest_wins(store_url) -> None:  # noqa: F811
    only_written_straight_to_the_store(store_url)
    from shiftnet.client import Client
    from shiftnet.store import open_store

    store = open_store(store_url)
    try:
        offline = Client(store)
        await offline.create(service("older", cluster_ip="127.30.0.7"))
        await offline.create(service("newer", cluster_ip="127.30.0.7"))
        await offline.create(service("plain"))
    finally:
        await store.close()
    async with running_master(store_url) as (_, client):
        newer = await eventually(
            lambda: client.get(Service, "default", "newer"),
            lambda s: ERROR_ANNOTATION in s.metadata.annotations,
        )
        got = await eventually(lambda: ips(client), lambda m: bool(m.get("plain")))
    assert got["older"] == "127.30.0.7"
    assert newer.spec.cluster_ip is None
    assert "provided IP is already allocated" in newer.metadata.annotations[ERROR_ANNOTATION]
    assert got["plain"] not in ("127.30.0.7", None)


async def test_stored_service_network_wins_over_a_changed_setting(store_url) -> None:  # noqa: F811
    async with running_master(store_url, SMALL) as (_, client):
        await client.create(service("one"))
        await eventually(lambda: ips(client), all_allocated(1))
    other = MasterConfig.build(service_network="127.32.0.0/16")
    async with running_master(store_url, other) as (master, client):
        await client.create(service("two"))
        got = await eventually(lambda: ips(client), all_allocated(2))
        assert master.cluster_ips.range.cidr == "127.31.0.0/29"
    assert got == {"one": "127.31.0.1", "two": "127.31.0.2"}
