"""``spec.healthCheckNodePort`` on a real (SQLite) store, through a running Master: allocated
from the node port pool for LoadBalancer + externalTrafficPolicy Local, kept, released, refused
in kube-apiserver's words."""

from __future__ import annotations

import pytest
from tests.support.master import eventually, running_master, service

from shiftnet.api import Service
from shiftnet.applying import ServiceIPCheck
from shiftnet.errors import InvalidAllocation
from shiftnet.master import Master, MasterConfig, nodeports

pytestmark = pytest.mark.integration

TEN = MasterConfig.build(node_port_range="30000-30009", load_balancer_range="127.61.0.0/29")


async def get(client, name: str) -> Service:  # type: ignore[no-untyped-def]
    return await client.get(Service, "default", name)


def local_lb(name: str, **spec: object) -> Service:
    return service(name, type="LoadBalancer", externalTrafficPolicy="Local", **spec)


def hc(svc: Service) -> int | None:
    return svc.spec.health_check_node_port


def allocated(svc: Service) -> bool:
    return bool(hc(svc)) and all(p.node_port for p in svc.spec.ports)


async def refused(client, svc: Service) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidAllocation) as err:
        await ServiceIPCheck(client).check(svc)
    return str(err.value)


async def test_health_check_port_allocated_kept_refused_released_and_restart_safe(
    tmp_path,
) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with running_master(url, TEN) as (_, client):
        await client.create(local_lb("web"))
        web = await eventually(lambda: get(client, "web"), allocated)
        assert (web.spec.ports[0].node_port, hc(web)) == (30000, 30001)
        # a Cluster-policy LoadBalancer and a NodePort Service get none
        await client.create(service("plain", type="LoadBalancer"))
        plain = await eventually(lambda: get(client, "plain"), lambda s: s.spec.ports[0].node_port)
        assert plain.spec.ports[0].node_port == 30002 and hc(plain) is None
        # a requested one is honoured when free
        await client.create(local_lb("asked", healthCheckNodePort=30004))
        asked = await eventually(lambda: get(client, "asked"), allocated)
        assert (asked.spec.ports[0].node_port, hc(asked)) == (30003, 30004)

        # the API's check: kube-apiserver's words, one pool for node ports and health checks
        prefix = 'Service "default/dup" is invalid: spec.healthCheckNodePort: Invalid value: '
        assert await refused(client, local_lb("dup", healthCheckNodePort=30001)) == (
            prefix + "30001: failed to allocate requested HealthCheck NodePort 30001: "
            "provided port is already allocated"
        )
        assert await refused(client, local_lb("dup", healthCheckNodePort=80)) == (
            prefix + "80: failed to allocate requested HealthCheck NodePort 80: provided port "
            "is not in the valid range. The range of valid ports is 30000-30009"
        )
        node_port_on_hc = service("dup", type="NodePort", ports=[{"port": 80, "nodePort": 30001}])
        assert (await refused(client, node_port_on_hc)).endswith(
            "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"
        )
        moved = await get(client, "web")
        moved.spec.health_check_node_port = 30004
        assert await refused(client, moved) == (
            'Service "default/web" is invalid: spec.healthCheckNodePort: field is immutable'
        )

        # an update without the field keeps the port
        again = await get(client, "web")
        again.spec.health_check_node_port = None
        again.metadata.labels["touched"] = "yes"
        await client.update(again)
        kept = await eventually(lambda: get(client, "web"), lambda s: bool(hc(s)))
        assert hc(kept) == 30001 and kept.metadata.labels["touched"] == "yes"

    async with running_master(url, TEN) as (master, client):  # a restart keeps allocations
        assert hc(await get(client, "web")) == 30001
        assert hc(await get(client, "asked")) == 30004
        # back to the Cluster policy: the port is released and goes to the next Service
        web = await get(client, "web")
        web.spec.external_traffic_policy = "Cluster"
        web.spec.health_check_node_port = None
        await client.update(web)
        await eventually(lambda: get(client, "web"), lambda s: hc(s) is None)
        await ServiceIPCheck(client).check(local_lb("next", healthCheckNodePort=30001))
        # the free port 30001 goes to the requested health check, not to the service port
        await client.create(local_lb("next", healthCheckNodePort=30001))
        nxt = await eventually(lambda: get(client, "next"), lambda s: allocated(s) or _error(s))
        assert hc(nxt) == 30001 and not _error(nxt)
        assert nxt.spec.ports[0].node_port == 30005
        # no longer a LoadBalancer: released too
        asked = await get(client, "asked")
        assert asked.status.load_balancer.ingress, "a LoadBalancer with its address"
        asked.spec.type = "NodePort"
        asked.spec.external_traffic_policy = None
        asked.spec.health_check_node_port = None
        await client.update(asked)
        # the master's own write: a NodePort Service keeps no balancer address
        asked = await eventually(
            lambda: get(client, "asked"), lambda s: not s.status.load_balancer.ingress
        )
        await settled(master, asked)
        assert hc(await get(client, "asked")) is None
        # the master gave it back: the next Service that asks for it gets it
        await ServiceIPCheck(client).check(local_lb("later", healthCheckNodePort=30004))
        await client.create(local_lb("later", healthCheckNodePort=30004))
        later = await eventually(lambda: get(client, "later"), lambda s: allocated(s) or _error(s))
        assert (hc(later), later.spec.ports[0].node_port, _error(later)) == (30004, 30006, False)
        # deleted: released
        await client.delete(Service, "default", "next")
        await eventually(
            lambda: ServiceIPCheck(client).check(local_lb("last", healthCheckNodePort=30001)),
            lambda _: True,
        )


def _error(svc: Service) -> bool:
    return nodeports.ERROR_ANNOTATION in svc.metadata.annotations


async def settled(master: Master, svc: Service) -> None:
    """The node port allocator holds ``svc`` as stored (or newer) and has synced it:
    whatever it would do about this version is done (a positive sign, not a pause)."""
    version = svc.metadata.resource_version
    informer = master.node_ports.informer

    async def cached() -> Service | None:
        return informer.get(svc.namespace, svc.name)

    # at or past it: a later write of the master's own (the same refusal noted again)
    # moves the stored version on, and the cache would never hold this one
    await eventually(
        cached,
        lambda s: s is not None and int(s.metadata.resource_version) >= int(version),
    )
    await master.node_ports.queue.wait_idle()


async def test_health_check_port_conflicts_written_around_the_api(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with running_master(url, TEN) as (master, client):
        await client.create(local_lb("first"))
        first = await eventually(lambda: get(client, "first"), allocated)
        assert hc(first) == 30001
        # straight to the store: the master refuses a taken port and says why, keeps asking
        await client.create(local_lb("second", healthCheckNodePort=30001))
        second = await eventually(lambda: get(client, "second"), _error)
        assert hc(second) is None
        assert second.metadata.annotations[nodeports.ERROR_ANNOTATION] == (
            'Service "default/second" is invalid: spec.healthCheckNodePort: Invalid value: '
            "30001: failed to allocate requested HealthCheck NodePort 30001: provided port is "
            "already allocated"
        )
        # the master has seen its own write and has nothing left to do for it ...
        await settled(master, second)
        assert hc(await get(client, "second")) is None, "never another port in its place"
        # ... and a retry decides the same: the next Service gets the lowest free ports
        second = await get(client, "second")  # as stored now: the master may have noted again
        second.metadata.labels["retry"] = "1"
        await client.update(second)
        await client.create(local_lb("third"))
        third = await eventually(lambda: get(client, "third"), allocated)
        assert (third.spec.ports[0].node_port, hc(third)) == (30003, 30004)
        await settled(master, await get(client, "second"))
        second = await get(client, "second")
        assert hc(second) is None and _error(second), "never another port in its place"
        # the holder leaves: the waiting Service gets the port it asked for
        await client.delete(Service, "default", "first")
        await client.update(await get(client, "second"))  # any event retries it
        second = await eventually(lambda: get(client, "second"), lambda s: bool(hc(s)))
        assert hc(second) == 30001 and not _error(second)
