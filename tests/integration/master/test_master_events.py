"""The master records a Warning Event on what it could not allocate, and expires old Events.

Real master on a real SQLite store: a seventh Service in a six-address range
gets ``ClusterIPNotAllocated``, a NodePort Service past the port range gets
``PortNotAllocated``, a third LoadBalancer Service in a two-address pool gets
``SyncLoadBalancerFailed``, a node past the cluster network gets
``SubnetsExhausted`` (its event in ``default``, a Node being cluster-wide),
and an Event last seen longer ago than the TTL is deleted while a recent one
stays.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from tests.support.master import eventually, node, running_master, service

from shiftnet.api import Event, Node, Service
from shiftnet.api.event import EventSource
from shiftnet.client import Client
from shiftnet.events.folding import about, new_event, reference
from shiftnet.master import MasterConfig
from shiftnet.master.loadbalancer import ERROR_ANNOTATION, ingress_ips

pytestmark = pytest.mark.integration


async def events_about(client: Client, obj_of) -> list[Event]:  # type: ignore[no-untyped-def]
    obj = await obj_of()
    return about(await client.list(Event), obj)


async def test_a_service_with_no_cluster_ip_left_gets_an_event(tmp_path: Path) -> None:
    small = MasterConfig.build(service_network="127.31.0.0/29")  # 6 usable addresses
    async with running_master(f"sqlite:///{tmp_path}/state.db", small) as (_, client):
        for i in range(7):
            await client.create(service(f"s{i}"))
        (event,) = await eventually(
            lambda: events_about(client, lambda: client.get(Service, "default", "s6")), bool
        )
    assert (event.type, event.reason) == ("Warning", "ClusterIPNotAllocated")
    assert "range is full" in (event.message or "")
    assert event.source.component == "master"
    assert event.involved_object.uid and event.metadata.namespace == "default"


async def test_a_node_port_past_the_range_gets_an_event(tmp_path: Path) -> None:
    small = MasterConfig.build(node_port_range="30000-30000")
    async with running_master(f"sqlite:///{tmp_path}/state.db", small) as (_, client):
        await client.create(service("first", type="NodePort"))
        await client.create(service("second", ns="default", type="NodePort"))
        found = await eventually(
            lambda: client.list(Event),
            lambda evs: any(e.reason == "PortNotAllocated" for e in evs),
        )
    (event,) = [e for e in found if e.reason == "PortNotAllocated"]
    assert event.involved_object.name in ("first", "second")
    assert "range is full" in (event.message or "")


async def test_a_load_balancer_with_no_address_left_gets_an_event(tmp_path: Path) -> None:
    small = MasterConfig.build(load_balancer_range="127.62.0.0/30")  # 2 usable addresses
    async with running_master(f"sqlite:///{tmp_path}/state.db", small) as (_, client):
        for name in ("lb1", "lb2", "lb3"):
            await client.create(service(name, type="LoadBalancer"))
        found = await eventually(
            lambda: client.list(Event),
            lambda evs: any(e.reason == "SyncLoadBalancerFailed" for e in evs),
        )
        lbs = [s for s in await client.list(Service) if s.spec.type == "LoadBalancer"]
        pending = [s for s in lbs if not ingress_ips(s)]
    (event,) = [e for e in found if e.reason == "SyncLoadBalancerFailed"]
    assert [s.name for s in pending] == [event.involved_object.name]
    assert event.type == "Warning" and event.source.component == "master"
    assert event.message == pending[0].metadata.annotations[ERROR_ANNOTATION]
    assert "is full" in (event.message or "")


async def test_a_node_with_no_subnet_left_gets_an_event_in_default(tmp_path: Path) -> None:
    cfg = MasterConfig.build(cluster_network="127.10.0.0/24", host_subnet_length=8)
    async with running_master(f"sqlite:///{tmp_path}/state.db", cfg) as (_, client):
        await client.create(node("n1"))
        await client.create(node("n2"))
        (event,) = await eventually(
            lambda: events_about(client, lambda: client.get(Node, None, "n2")), bool
        )
    assert (event.type, event.reason) == ("Warning", "SubnetsExhausted")
    assert event.metadata.namespace == "default"
    assert 'no subnet left for node "n2"' in (event.message or "")


async def test_events_last_seen_longer_ago_than_the_ttl_are_deleted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    now = dt.datetime.now(dt.UTC)
    source = EventSource(component="test")
    async with running_master(url, MasterConfig.build(event_ttl="1h")) as (master, client):
        svc = await client.create(service("web"))

        def event(minutes_ago: int) -> Event:
            seen = now - dt.timedelta(minutes=minutes_ago)
            return new_event(
                reference(svc),
                source,
                "Normal",
                "Test",
                f"{minutes_ago}m",
                count=1,
                first=seen - dt.timedelta(hours=3),
                last=seen,
            )

        await client.create(event(61))  # first seen 4h ago, last 61 min ago: expired
        await client.create(event(59))  # first seen 4h ago, last 59 min ago: kept
        left = await eventually(lambda: client.list(Event), lambda evs: len(evs) == 1)
        assert [e.message for e in left] == ["59m"]
        assert master.event_expiry.deleted == 1
