"""Pure: which EndpointSlices a Service with a selector should have, given the pods.

Rules (Kubernetes' EndpointSlice controller, where it is explicit):

* the same pods as the Endpoints (:mod:`endpoints_model`), plus pods being
  deleted: those stay, ``ready: false, serving: <pod Ready>, terminating:
  true``, until their object is gone; ``ready`` is ``serving and not
  terminating``, or always true when the Service publishes not-ready
  addresses;
* one slice holds endpoints of one address family and one resolved port set,
  at most :data:`MAX_ENDPOINTS_PER_SLICE` (the controller's default
  ``--max-endpoints-per-slice``);
* changes are kept small, as upstream: an endpoint stays in the slice that
  holds it; new endpoints fill the slices with room (by name), then new
  slices; slices left empty go; a Service with no endpoints keeps one empty
  placeholder slice;
* labels: the Service's own, ``kubernetes.io/service-name``,
  ``endpointslice.kubernetes.io/managed-by`` and ``service.kubernetes.io/headless``
  for headless Services; the Service is the slice's controller owner.

New slices have no name: the controller names them ``<service>-<suffix>``
(as ``generateName``). Order is deterministic: endpoints by address, ports by
name then number; the same pods and slices in any order give the same plan.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from shiftnet.api import Pod, Service
from shiftnet.api.base import ObjectMeta, OwnerReference
from shiftnet.api.core import ObjectReference
from shiftnet.api.discovery import (
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    Endpoint,
    EndpointConditions,
    EndpointSlice,
    EndpointSlicePort,
)
from shiftnet.api.selectors import Selector
from shiftnet.api.termination import terminating
from shiftnet.master.endpoints_model import has_selector, resolve_port

MAX_ENDPOINTS_PER_SLICE = 100
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"

PortSet = tuple[tuple[str, int, str], ...]  # (name, port, protocol), sorted
Group = tuple[str, PortSet]  # (addressType, ports)


@dataclass
class SlicePlan:
    """What to write: new slices (unnamed), changed slices, names of slices to delete."""

    create: list[EndpointSlice] = field(default_factory=list)
    update: list[EndpointSlice] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)


def managed_slice(es: EndpointSlice) -> bool:
    """Written by this controller (user-written slices are never touched)."""
    return es.metadata.labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME


def ip_key(ip: str) -> tuple[int, bytes, str]:
    """Numeric order, IPv4 first (the C parser: ``ipaddress`` costs ~25 us an address)."""
    for version, family in ((4, socket.AF_INET), (6, socket.AF_INET6)):
        try:
            return (version, socket.inet_pton(family, ip), ip)
        except (OSError, ValueError):
            continue
    return (9, b"", ip)


def address_type(ip: str) -> str | None:
    version = ip_key(ip)[0]
    return "IPv4" if version == 4 else "IPv6" if version == 6 else None


def _eligible(pod: Pod) -> bool:
    """As Endpoints, but a pod being deleted stays (it is terminating, maybe still serving)."""
    return bool(pod.status.pod_ip) and pod.status.phase not in ("Succeeded", "Failed")


def _endpoint(svc: Service, pod: Pod) -> Endpoint:
    serving = pod.ready
    ending = terminating(pod)
    ready = svc.spec.publish_not_ready_addresses or (serving and not ending)
    hostname = None
    if pod.spec.hostname and pod.spec.subdomain == svc.name:
        hostname = pod.spec.hostname
    return Endpoint(
        addresses=[pod.status.pod_ip or ""],
        conditions=EndpointConditions(ready=ready, serving=serving, terminating=ending),
        hostname=hostname,
        node_name=pod.spec.node_name,
        target_ref=ObjectReference(
            kind="Pod", namespace=pod.namespace, name=pod.name, uid=pod.metadata.uid
        ),
    )


def _endpoint_key(ep: Endpoint) -> tuple[tuple[int, bytes, str], str]:
    ref = ep.target_ref.name or "" if ep.target_ref else ""
    return (ip_key(ep.addresses[0] if ep.addresses else ""), ref)


def desired_groups(svc: Service, pods: Iterable[Pod]) -> dict[Group, list[Endpoint]]:
    """Every endpoint the Service should have, by (address family, resolved ports)."""
    families = set(svc.spec.ip_families or [])
    groups: dict[Group, list[Endpoint]] = {}
    if not has_selector(svc):
        return groups
    selector = Selector.from_labels(svc.spec.selector or {})
    namespace = svc.namespace or ""
    for pod in pods:
        if (pod.namespace or "") != namespace or not _eligible(pod):
            continue
        if not selector.matches(pod.metadata.labels):
            continue
        family = address_type(pod.status.pod_ip or "")
        if family is None or (families and family not in families):
            continue
        ports: list[tuple[str, int, str]] = []
        for sp in svc.spec.ports:
            n = resolve_port(pod, sp.effective_target_port, sp.protocol)
            if n is not None:
                ports.append((sp.name or "", n, sp.protocol))
        if svc.spec.ports and not ports:
            continue  # nothing of this pod is reachable through the Service
        groups.setdefault((family, tuple(sorted(set(ports)))), []).append(_endpoint(svc, pod))
    return {g: sorted(eps, key=_endpoint_key) for g, eps in sorted(groups.items())}


def _group_of(es: EndpointSlice) -> Group:
    ports = tuple(sorted((p.name or "", p.port or 0, p.protocol or "TCP") for p in es.ports))
    return (es.address_type, ports)


def slice_labels(svc: Service) -> dict[str, str]:
    labels = dict(svc.metadata.labels)
    labels[SERVICE_NAME_LABEL] = svc.name
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    if svc.spec.headless:
        labels[HEADLESS_LABEL] = ""
    else:
        labels.pop(HEADLESS_LABEL, None)
    return dict(sorted(labels.items()))


def _new_slice(svc: Service, group: Group, endpoints: list[Endpoint]) -> EndpointSlice:
    family, ports = group
    return EndpointSlice(
        metadata=ObjectMeta(
            generate_name=f"{svc.name}-",
            namespace=svc.namespace,
            labels=slice_labels(svc),
            owner_references=[
                OwnerReference(
                    api_version="v1",
                    kind="Service",
                    name=svc.name,
                    uid=svc.metadata.uid or "",
                    controller=True,
                    block_owner_deletion=True,
                )
            ],
        ),
        address_type=family,
        endpoints=endpoints,
        ports=[
            EndpointSlicePort(name=name, port=port, protocol=proto) for name, port, proto in ports
        ],
    )


def _content(es: EndpointSlice) -> tuple[object, ...]:
    meta = es.metadata
    owners = [o.to_dict() for o in meta.owner_references or []]
    return (
        es.address_type,
        [e.to_dict() for e in es.endpoints],
        [p.to_dict() for p in es.ports],
        meta.labels,
        owners,
    )


def same_slice(a: EndpointSlice, b: EndpointSlice) -> bool:
    """Equal as far as this controller cares (endpoints, ports, labels, owner)."""
    return _content(a) == _content(b)


def plan_slices(
    svc: Service,
    pods: Iterable[Pod],
    existing: Iterable[EndpointSlice],
    max_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
) -> SlicePlan:
    """The writes that bring the Service's managed slices to what its pods say."""
    plan = SlicePlan()
    mine = sorted((s for s in existing if managed_slice(s)), key=lambda s: s.name)
    if not has_selector(svc):
        plan.delete = [s.name for s in mine]
        return plan
    wanted = desired_groups(svc, pods)
    have: dict[Group, list[EndpointSlice]] = {}
    for es in mine:
        have.setdefault(_group_of(es), []).append(es)
    kept: list[EndpointSlice] = []  # slices that stay, with their new content
    for group in sorted(set(wanted) | set(have)):
        desired = {e.addresses[0]: e for e in wanted.get(group, [])}
        placed: set[str] = set()
        slices: list[tuple[EndpointSlice, list[Endpoint]]] = []
        for es in have.get(group, []):
            stay = [
                desired[a]
                for e in es.endpoints
                for a in e.addresses[:1]
                if a in desired and a not in placed
            ][:max_per_slice]
            placed.update(e.addresses[0] for e in stay)
            slices.append((es, stay))
        new = [e for a, e in desired.items() if a not in placed]
        for _, stay in slices:  # fill the slices with room, by name
            room = max_per_slice - len(stay)
            if room > 0 and new:
                stay.extend(new[:room])
                new = new[room:]
        for es, stay in slices:
            if not stay:
                plan.delete.append(es.name)
                continue
            want = _new_slice(svc, group, sorted(stay, key=_endpoint_key))
            want.metadata = es.metadata.model_copy(deep=True)
            want.metadata.labels = slice_labels(svc)
            want.metadata.owner_references = _new_slice(svc, group, []).metadata.owner_references
            kept.append(want)
            if not same_slice(es, want):
                plan.update.append(want)
        for i in range(0, len(new), max_per_slice):
            plan.create.append(_new_slice(svc, group, new[i : i + max_per_slice]))
    if not kept and not plan.create:
        # no endpoints: one empty placeholder, as upstream (an existing one is reused)
        placeholder = _new_slice(svc, ("IPv4", ()), [])
        reuse = next((s for s in mine if not s.endpoints and not s.ports), None)
        if reuse is not None:
            plan.delete.remove(reuse.name)
            placeholder.metadata = reuse.metadata.model_copy(deep=True)
            placeholder.metadata.labels = slice_labels(svc)
            placeholder.metadata.owner_references = _new_slice(
                svc, ("IPv4", ()), []
            ).metadata.owner_references
            if not same_slice(reuse, placeholder):
                plan.update.append(placeholder)
        else:
            plan.create.append(placeholder)
    _take_over_deleted(plan, {s.name: s for s in mine})
    plan.delete.sort()
    plan.update.sort(key=lambda s: s.name)
    return plan


def _take_over_deleted(plan: SlicePlan, by_name: dict[str, EndpointSlice]) -> None:
    """As upstream's reconciler finalizes: a slice to create takes over a slice to delete
    of its address type (its name and identity), one update instead of a create and a
    delete, so readers never see the old slice beside its replacement."""
    creates: list[EndpointSlice] = []
    for new in plan.create:
        old = next(
            (by_name[n] for n in plan.delete if by_name[n].address_type == new.address_type),
            None,
        )
        if old is None:
            creates.append(new)
            continue
        plan.delete.remove(old.name)
        meta = old.metadata.model_copy(deep=True)
        meta.labels = new.metadata.labels
        meta.owner_references = new.metadata.owner_references
        new.metadata = meta
        plan.update.append(new)
    plan.create = creates
