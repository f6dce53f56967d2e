"""The LoadBalancer address allocator on a Service cache that lags its own writes.

A real SQLite store; the allocator's informers read it through a store whose
Service watch hands each event on late. A pending Service that got an address
is queued again (another address was given back) while the cache still shows
it pending: the decision is written over a stale version, the store refuses
it, and deciding again on the stored Service finds nothing to change. That
must keep the address held, not give it back: a Service's address never
changes under it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.lagging_store import lagging_controller
from tests.support.master import eventually, service

from shiftnet.api import Service
from shiftnet.client import Client
from shiftnet.informer import Informers
from shiftnet.master.loadbalancer import LoadBalancerAllocator, ingress_ips

pytestmark = pytest.mark.integration

LAG = 0.2  # seconds each Service event waits before the cache sees it
POOL = "203.0.113.0/31"  # two addresses, none reserved


def balancer(name: str) -> Service:
    return service(name, type="LoadBalancer")


async def test_a_pending_service_keeps_the_address_it_got_while_the_cache_lags(
    tmp_path: Path,
) -> None:
    def allocator(client: Client, informers: Informers) -> LoadBalancerAllocator:
        return LoadBalancerAllocator(client, informers, POOL, workers=2)

    url = f"sqlite:///{tmp_path}/state.db"
    async with lagging_controller(url, "services", LAG, allocator) as (client, lb):
        await _pending_service_keeps_its_address(client, lb)


async def _pending_service_keeps_its_address(client: Client, lb: LoadBalancerAllocator) -> None:
    seen: list[str] = []  # every address "a" showed, in order

    async def address_of(name: str) -> list[str]:
        return ingress_ips(await client.get(Service, "default", name))

    async def record_a() -> None:
        while True:
            found = await client.try_get(Service, "default", "a")
            ips = ingress_ips(found) if found is not None else []
            if ips and (not seen or seen[-1] != ips[0]):
                seen.append(ips[0])
            await asyncio.sleep(0.005)

    recorder = asyncio.create_task(record_a())
    try:
        await client.create(balancer("b"))
        (first,) = await eventually(lambda: address_of("b"), bool)
        await client.create(balancer("c"))
        (second,) = await eventually(lambda: address_of("c"), bool)
        await client.create(balancer("a"))  # the pool is full: "a" waits
        await asyncio.sleep(3 * LAG)
        assert await address_of("a") == []
        # "c" gives its address to "a"; "b"'s release queues "a" again before the
        # cache shows "a"'s new address
        await client.delete(Service, "default", "c")
        await client.delete(Service, "default", "b")
        await eventually(lambda: address_of("a"), bool)
        await asyncio.sleep(6 * LAG)  # every lagged event delivered and handled
        await lb.queue.wait_idle()
        assert seen == [second], f'"a" showed {seen}: its address changed under it'
        await client.create(balancer("d"))  # the other address is free, "a"'s is not
        assert await eventually(lambda: address_of("d"), bool) == [first]
        assert await address_of("a") == [second]
    finally:
        recorder.cancel()
