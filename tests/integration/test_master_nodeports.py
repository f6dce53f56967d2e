"""Node port and load-balancer allocators on a real (SQLite) store, through a running Master."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.master import eventually, running_master, service

from shiftnet.api import Service
from shiftnet.applying import ServiceIPCheck
from shiftnet.errors import InvalidAllocation
from shiftnet.master import MasterConfig, loadbalancer, nodeports

pytestmark = pytest.mark.integration

SMALL = MasterConfig.build(node_port_range="30000-30002", load_balancer_range="127.60.0.0/30")


async def get(client, name: str) -> Service:  # type: ignore[no-untyped-def]
    return await client.get(Service, "default", name)


def node_ports(svc: Service) -> list[int | None]:
    return [p.node_port for p in svc.spec.ports]


def settled(svc: Service) -> bool:
    return all(node_ports(svc)) or refused(svc)


def refused(svc: Service) -> bool:
    return nodeports.ERROR_ANNOTATION in svc.metadata.annotations


async def test_node_ports_allocated_requested_kept_released_and_restart_safe(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    two_ports = [{"name": "a", "port": 80}, {"name": "b", "port": 81, "protocol": "UDP"}]
    async with running_master(url) as (_, client):
        await client.create(service("auto", type="NodePort", ports=two_ports))
        await client.create(
            service("asked", type="NodePort", ports=[{"port": 80, "nodePort": 31000}])
        )
        auto = await eventually(lambda: get(client, "auto"), lambda s: all(node_ports(s)))
        asked = await eventually(lambda: get(client, "asked"), lambda s: s.metadata.generation)
        assert node_ports(auto) == [30000, 30001] and node_ports(asked) == [31000]
        # the API's (and apply's) check refuses, in Kubernetes' words, before anything is stored
        for wanted, message in (
            (
                31000,
                "spec.ports[0].nodePort: Invalid value: 31000: provided port is already allocated",
            ),
            (
                80,
                "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid "
                "range. The range of valid ports is 30000-32767",
            ),
        ):
            with pytest.raises(InvalidAllocation) as refused:
                await ServiceIPCheck(client).check(
                    service("dup", type="NodePort", ports=[{"port": 80, "nodePort": wanted}])
                )
            assert str(refused.value) == f'Service "default/dup" is invalid: {message}'
        # re-applying without nodePort keeps what the port holds
        again = await get(client, "auto")
        for p in again.spec.ports:
            p.node_port = None
        await client.update(again)
        kept = await eventually(lambda: get(client, "auto"), lambda s: all(node_ports(s)))
        assert node_ports(kept) == [30000, 30001]

    async with running_master(url) as (_, client):  # a restart keeps every allocation
        await client.create(service("third", type="NodePort"))
        third = await eventually(lambda: get(client, "third"), lambda s: all(node_ports(s)))
        assert node_ports(third) == [30002]
        assert node_ports(await get(client, "auto")) == [30000, 30001]
        # a type change gives the ports back; the next Service gets the lowest again
        auto = await get(client, "auto")
        auto.spec.type = "ClusterIP"
        for port in auto.spec.ports:
            port.node_port = None
        await client.update(auto)
        cleared = await eventually(lambda: get(client, "auto"), lambda s: not any(node_ports(s)))
        assert cleared.spec.type == "ClusterIP"
        await client.create(service("fourth", type="NodePort"))
        fourth = await eventually(lambda: get(client, "fourth"), lambda s: all(node_ports(s)))
        assert node_ports(fourth) == [30000]
        # a deletion gives them back too
        await client.delete(Service, "default", "asked")
        await client.create(
            service("fifth", type="NodePort", ports=[{"port": 80, "nodePort": 31000}])
        )
        fifth = await eventually(lambda: get(client, "fifth"), settled)
        assert node_ports(fifth) == [31000]
        assert nodeports.ERROR_ANNOTATION not in fifth.metadata.annotations


async def test_node_port_range_exhausted_and_conflicts_written_around_the_api(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with running_master(url, SMALL) as (_, client):
        three = [{"name": n, "port": p} for n, p in (("a", 80), ("b", 81), ("c", 82))]
        await client.create(service("all", type="NodePort", ports=three))
        await eventually(lambda: get(client, "all"), lambda s: all(node_ports(s)))
        with pytest.raises(InvalidAllocation, match="range is full"):
            await ServiceIPCheck(client).check(service("more", type="NodePort"))
        # straight to the store (around the API): the master refuses and says why
        await client.create(service("more", type="NodePort"))
        await client.create(
            service("taken", type="NodePort", ports=[{"port": 80, "nodePort": 30001}])
        )
        more = await eventually(lambda: get(client, "more"), settled)
        # "taken" arrives with its port set: settled only once the master refused it
        taken = await eventually(lambda: get(client, "taken"), refused)
        assert node_ports(more) == [None] and node_ports(taken) == [None]
        assert more.metadata.annotations[nodeports.ERROR_ANNOTATION] == (
            'Service "default/more": spec.ports[0].nodePort: failed to allocate a nodePort '
            "from 30000-30002: range is full"
        )
        assert taken.metadata.annotations[nodeports.ERROR_ANNOTATION].endswith(
            "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"
        )
        # The master's own write of the cleared port is no new request: it keeps asking
        # for 30001 and keeps saying why (not "range is full", never another port).
        await asyncio.sleep(0.5)
        taken = await get(client, "taken")
        assert node_ports(taken) == [None]
        assert taken.metadata.annotations[nodeports.ERROR_ANNOTATION].endswith(
            "Invalid value: 30001: provided port is already allocated"
        )
        assert node_ports(await get(client, "all")) == [30000, 30001, 30002]


async def test_load_balancer_pool_fills_ingress_and_releases(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"

    def ingress(svc: Service) -> list[str]:
        return loadbalancer.ingress_ips(svc)

    def lb_settled(svc: Service) -> bool:
        return bool(ingress(svc)) or loadbalancer.ERROR_ANNOTATION in svc.metadata.annotations

    async with running_master(url, SMALL) as (_, client):  # 127.60.0.1 and .2 usable
        await client.create(service("lb1", type="LoadBalancer"))
        await client.create(service("lb2", type="LoadBalancer", loadBalancerIP="127.60.0.2"))
        lb2 = await eventually(lambda: get(client, "lb2"), lb_settled)
        lb1 = await eventually(lambda: get(client, "lb1"), lb_settled)
        assert sorted(ingress(lb1) + ingress(lb2)) == ["127.60.0.1", "127.60.0.2"]
        assert all(node_ports(lb1)), "a LoadBalancer Service also gets node ports"
        await client.create(service("lb3", type="LoadBalancer"))
        lb3 = await eventually(lambda: get(client, "lb3"), lb_settled)
        assert ingress(lb3) == []
        assert "is full" in lb3.metadata.annotations[loadbalancer.ERROR_ANNOTATION]
        held = {"lb1": ingress(lb1), "lb2": ingress(lb2)}
    async with running_master(url, SMALL) as (_, client):  # restart keeps the addresses
        for name, ips in held.items():
            assert ingress(await get(client, name)) == ips
        # lb1 becomes a ClusterIP Service: its address goes to the waiting lb3
        lb1 = await get(client, "lb1")
        lb1.spec.type = "ClusterIP"
        for port in lb1.spec.ports:
            port.node_port = None
        await client.update(lb1)
        lb3 = await eventually(lambda: get(client, "lb3"), lambda s: bool(ingress(s)))
        assert ingress(lb3) == held["lb1"]
        assert loadbalancer.ERROR_ANNOTATION not in lb3.metadata.annotations
        lb1 = await eventually(lambda: get(client, "lb1"), lambda s: not ingress(s))
        assert not any(node_ports(lb1))
