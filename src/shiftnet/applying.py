"""``apply`` semantics as a library: create or update, keeping what the cluster assigned.

Used by ``shiftnet apply`` and by the API server, so both doors refuse the
same objects: the merge is :mod:`shiftnet.api.apply_merge`; the checks that
need the store (a pinned ``resourceVersion``, a Service's ClusterIP request)
are here. When nothing the user controls differs, nothing is written and the
result is ``unchanged``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shiftnet.api import ClusterNetwork, Resource, Service
from shiftnet.api.apply_merge import for_create, merged_for_update
from shiftnet.api.validation import has_update_rules, validate, validate_update
from shiftnet.client import Client
from shiftnet.errors import AlreadyExists, Conflict, NotFound
from shiftnet.master.clusterip import ClusterIPAllocator
from shiftnet.master.nodeports import RANGE_ANNOTATION, NodePortAllocator
from shiftnet.master.service_families import ServiceNetworks
from shiftnet.master.service_ranges import PortRange

Action = Literal["created", "configured", "unchanged"]


@dataclass(frozen=True)
class Applied:
    obj: Resource
    action: Action


async def check_version(client: Client, wanted: Resource) -> None:
    """A manifest that carries ``metadata.resourceVersion`` must match the stored object."""
    rv = wanted.metadata.resource_version
    if not rv:
        return
    cls = type(wanted)
    current = await client.try_get(cls, wanted.namespace, wanted.name)
    if current is not None and current.metadata.resource_version != rv:
        raise Conflict(
            cls.RESOURCE,
            wanted.namespace,
            wanted.name,
            f"resourceVersion {rv} in the manifest, {current.metadata.resource_version} stored",
        )


async def check_rules(client: Client, wanted: Resource) -> None:
    """Validate ``wanted`` as a create, or as an update of the object stored under its name."""
    if not has_update_rules(type(wanted)):
        validate(wanted)
        return
    existing = await client.try_get(type(wanted), wanted.namespace, wanted.name)
    if existing is None:
        validate(wanted)
    else:
        validate_update(merged_for_update(existing, wanted), existing)


async def apply_object(client: Client, wanted: Resource, attempts: int = 10) -> Applied:
    """Create ``wanted`` or bring the stored object in line with it."""
    cls = type(wanted)
    pinned = wanted.metadata.resource_version or None
    for _ in range(attempts):
        existing = await client.try_get(cls, wanted.namespace, wanted.name)
        if existing is None:
            try:
                return Applied(await client.create(for_create(wanted)), "created")
            except AlreadyExists:
                continue  # someone created it meanwhile: update instead
        merged = merged_for_update(existing, wanted)
        if merged.to_dict() == existing.to_dict():
            return Applied(existing, "unchanged")
        if pinned:
            merged.metadata.resource_version = pinned
        try:
            return Applied(await client.update(merged, existing), "configured")
        except Conflict:
            if pinned:
                raise
            continue  # changed by a controller meanwhile: merge again
        except NotFound:
            continue
    raise Conflict(
        cls.RESOURCE, wanted.namespace, wanted.name, f"gave up after {attempts} attempts"
    )


class ServiceIPCheck:
    """Refuse, before anything is written, a Service whose ClusterIP request the master
    would reject (taken, out of range, a change of the one it holds, range full):
    raises :class:`~shiftnet.errors.InvalidAllocation`. Services checked earlier by
    the same instance (earlier documents of one apply) count as taken."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.network: ServiceNetworks | None = None
        self.known: list[Service] | None = None
        self.node_ports: PortRange | None = None

    async def check(self, svc: Service) -> None:
        if self.known is None:
            cn = await self.client.try_get(ClusterNetwork, None, "default")
            self.network = ServiceNetworks.of(cn)
            node_ports = cn.metadata.annotations.get(RANGE_ANNOTATION) if cn else None
            self.node_ports = PortRange.parse(node_ports) if node_ports else None
            self.known = await self.client.list(Service) if self.network else []
        if not self.network:
            return  # no master has run yet: it will report what it cannot honour
        ClusterIPAllocator.check_request(svc, self.known, self.network)
        if self.node_ports is not None:
            NodePortAllocator.check_request(svc, self.known, self.node_ports)
        self.known = [s for s in self.known if s.key != svc.key] + [svc]
