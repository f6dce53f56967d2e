"""Pure: the EndpointSlices that mirror the Endpoints a user wrote for a Service without a selector.

Rules (Kubernetes' EndpointSliceMirroring controller):

* mirrored only when the Service exists and has no selector, and the
  Endpoints is not labelled ``endpointslice.kubernetes.io/skip-mirror:
  "true"`` nor carries a leader-election record; otherwise the controller's
  slices of that name go;
* the subsets are first put in their canonical form (upstream's
  ``RepackSubsets``): an address (IP and target UID) counts once per port,
  not-ready wins over ready on that port, and addresses offering the same
  ports with the same readiness share one subset; a subset without ports
  stays, with no ports;
* of each subset at most ``max_per_subset`` addresses (the controller's
  ``--mirroring-max-endpoints-per-subset``, default 1000) are mirrored, the
  ready ones first, in the canonical order (IP text, then target UID); the
  rest are reported as skipped, as are addresses that are not IPs;
* one slice per address family and port set holds them all: ``addresses`` →
  ``ready: true``, ``notReadyAddresses`` → ``ready: false`` (no ``serving`` or
  ``terminating``: Endpoints do not know them); hostname, nodeName and
  targetRef are copied, the IP in its canonical spelling;
* labels: the Endpoints' own, then ``kubernetes.io/service-name`` and
  ``endpointslice.kubernetes.io/managed-by``; annotations: the Endpoints' own
  but the last-change trigger time and kubectl's last-applied configuration;
  owner: the Endpoints (controller);
* few writes: the first slice (by name) of a group is updated in place, the
  others of the group are deleted; a slice that would be deleted is reused
  for a group that needs a new one; an Endpoints being deleted gets no new
  slice.

Deterministic: the same Endpoints and slices, in any order, give the same plan.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

from shiftnet.api import Endpoints, Service
from shiftnet.api.base import ObjectMeta, OwnerReference
from shiftnet.api.core import EndpointAddress, EndpointSubset
from shiftnet.api.discovery import (
    MANAGED_BY_LABEL,
    MIRRORING_CONTROLLER,
    SERVICE_NAME_LABEL,
    Endpoint,
    EndpointConditions,
    EndpointSlice,
    EndpointSlicePort,
)
from shiftnet.master.endpoints_model import has_selector
from shiftnet.master.endpointslices_model import SlicePlan, ip_key

CONTROLLER_NAME = MIRRORING_CONTROLLER
MAX_ENDPOINTS_PER_SUBSET = 1000
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
NOT_MIRRORED_ANNOTATIONS = frozenset(
    {
        "endpoints.kubernetes.io/last-change-trigger-time",
        "kubectl.kubernetes.io/last-applied-configuration",
    }
)

Port = tuple[str, int, str]  # (name, port, protocol)
PortSet = tuple[Port, ...]  # sorted; () for a subset without ports
Group = tuple[str, PortSet]  # (addressType, ports)
_AddrKey = tuple[str, str]  # (IP as written, target UID)


@dataclass
class MirrorPlan(SlicePlan):
    """The writes, and what was left out (for the Warning Events upstream records)."""

    invalid: int = 0  # addresses that are not IPs
    over_capacity: int = 0  # addresses beyond max_per_subset in their subset
    groups: list[Group] = field(default_factory=list)  # the (family, ports) mirrored


def mirrored_slice(es: EndpointSlice) -> bool:
    """Written by this controller (every other slice is never touched)."""
    return es.metadata.labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME


def should_mirror(svc: Service | None, ep: Endpoints | None) -> bool:
    """The Endpoints is the user's (its Service has no selector) and not opted out."""
    if svc is None or ep is None or has_selector(svc):
        return False
    if ep.metadata.labels.get(SKIP_MIRROR_LABEL) == "true":
        return False
    return LEADER_ANNOTATION not in ep.metadata.annotations


def _addr_key(addr: EndpointAddress) -> _AddrKey:
    return (addr.ip, addr.target_ref.uid or "" if addr.target_ref else "")


def repack(
    subsets: Iterable[EndpointSubset],
) -> list[tuple[PortSet, list[EndpointAddress], list[EndpointAddress]]]:
    """The canonical subsets: (ports, ready addresses, not-ready addresses), sorted."""
    first: dict[_AddrKey, EndpointAddress] = {}
    by_port: dict[Port | None, dict[_AddrKey, bool]] = {}
    for subset in subsets:
        ports: list[Port | None] = [
            (p.name or "", p.port, p.protocol or "TCP") for p in subset.ports
        ] or [None]
        marked = [(a, True) for a in subset.addresses] + [
            (a, False) for a in subset.not_ready_addresses
        ]
        for port in ports:
            seen = by_port.setdefault(port, {})
            for addr, ready in marked:
                key = _addr_key(addr)
                first.setdefault(key, addr)
                seen[key] = seen.get(key, True) and ready  # not ready wins
    # addresses without ports stay apart from those that offer ports
    sets: dict[tuple[bool, frozenset[tuple[_AddrKey, bool]]], list[Port]] = {}
    for port, seen in by_port.items():
        ports_of = sets.setdefault((port is None, frozenset(seen.items())), [])
        if port is not None:
            ports_of.append(port)
    out = []
    for (_, members), ports_of in sets.items():
        up = sorted(k for k, r in members if r)
        down = sorted(k for k, r in members if not r)
        out.append((tuple(sorted(ports_of)), [first[k] for k in up], [first[k] for k in down]))
    return sorted(out, key=lambda s: (s[0], [_addr_key(a) for a in s[1] + s[2]]))


def _endpoint(addr: EndpointAddress, ready: bool) -> tuple[str, Endpoint] | None:
    """The slice endpoint of one address and its family, or None when it is not an IP."""
    version, packed, _ = ip_key(addr.ip)
    if version not in (4, 6):
        return None
    canonical = str(ipaddress.ip_address(packed))  # from the parsed bytes: no text parsing
    return (
        "IPv4" if version == 4 else "IPv6",
        Endpoint(
            addresses=[canonical],
            conditions=EndpointConditions(ready=ready),
            hostname=addr.hostname or None,
            node_name=addr.node_name,
            target_ref=addr.target_ref,
        ),
    )


def _endpoint_key(ep: Endpoint) -> tuple[tuple[int, bytes, str], str]:
    uid = ep.target_ref.uid or "" if ep.target_ref else ""
    return (ip_key(ep.addresses[0]), uid)


def desired_groups(
    ep: Endpoints, max_per_subset: int = MAX_ENDPOINTS_PER_SUBSET
) -> tuple[dict[Group, list[Endpoint]], int, int]:
    """Endpoints by (family, ports); the counts of invalid and over-capacity addresses."""
    groups: dict[Group, list[Endpoint]] = {}
    invalid = over = 0
    for ports, ready, not_ready in repack(ep.subsets):
        added = 0
        for addr, is_ready in [(a, True) for a in ready] + [(a, False) for a in not_ready]:
            if added >= max_per_subset:
                over += 1
                continue
            made = _endpoint(addr, is_ready)
            if made is None:
                invalid += 1
                continue
            added += 1
            groups.setdefault((made[0], ports), []).append(made[1])
    ordered = {g: sorted(eps, key=_endpoint_key) for g, eps in sorted(groups.items())}
    return ordered, invalid, over


def _meta(ep: Endpoints) -> ObjectMeta:
    labels = dict(ep.metadata.labels)
    labels[SERVICE_NAME_LABEL] = ep.name
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    annotations = {
        k: v for k, v in ep.metadata.annotations.items() if k not in NOT_MIRRORED_ANNOTATIONS
    }
    return ObjectMeta(
        generate_name=f"{ep.name}-",
        namespace=ep.namespace,
        labels=dict(sorted(labels.items())),
        annotations=dict(sorted(annotations.items())),
        owner_references=[
            OwnerReference(
                api_version="v1",
                kind="Endpoints",
                name=ep.name,
                uid=ep.metadata.uid or "",
                controller=True,
                block_owner_deletion=True,
            )
        ],
    )


def _new_slice(ep: Endpoints, group: Group, endpoints: list[Endpoint]) -> EndpointSlice:
    family, ports = group
    return EndpointSlice(
        metadata=_meta(ep),
        address_type=family,
        endpoints=endpoints,
        ports=[EndpointSlicePort(name=n, port=p, protocol=proto) for n, p, proto in ports],
    )


def _group_of(es: EndpointSlice) -> Group:
    ports = tuple(sorted((p.name or "", p.port or 0, p.protocol or "TCP") for p in es.ports))
    return (es.address_type, ports)


def _content(es: EndpointSlice) -> tuple[object, ...]:
    meta = es.metadata
    return (
        es.address_type,
        [e.to_dict() for e in es.endpoints],
        [p.to_dict() for p in es.ports],
        meta.labels,
        meta.annotations,
        [o.to_dict() for o in meta.owner_references or []],
    )


def _reuse(old: EndpointSlice, want: EndpointSlice) -> EndpointSlice:
    """``want`` written over ``old``: its name, resourceVersion and the rest of its metadata."""
    fresh = want.metadata
    want.metadata = old.metadata.model_copy(deep=True)
    want.metadata.generate_name = None
    want.metadata.labels = fresh.labels
    want.metadata.annotations = fresh.annotations
    want.metadata.owner_references = fresh.owner_references
    return want


def plan_mirror(
    svc: Service | None,
    ep: Endpoints | None,
    existing: Iterable[EndpointSlice],
    max_per_subset: int = MAX_ENDPOINTS_PER_SUBSET,
) -> MirrorPlan:
    """The writes that bring the mirrored slices of one Endpoints to what it says."""
    plan = MirrorPlan()
    mine = sorted((s for s in existing if mirrored_slice(s)), key=lambda s: s.name)
    if ep is None or not should_mirror(svc, ep):
        plan.delete = [s.name for s in mine]
        return plan
    wanted, plan.invalid, plan.over_capacity = desired_groups(ep, max_per_subset)
    plan.groups = list(wanted)
    have: dict[Group, list[EndpointSlice]] = {}
    for es in mine:
        have.setdefault(_group_of(es), []).append(es)
    spare: list[EndpointSlice] = []  # slices no group keeps: reused before any create
    creates: list[EndpointSlice] = []
    for group in sorted(set(wanted) | set(have)):
        slices = have.get(group, [])
        if group not in wanted:
            spare.extend(slices)
            continue
        want = _new_slice(ep, group, wanted[group])
        if slices:
            spare.extend(slices[1:])
            want = _reuse(slices[0], want)
            if _content(want) != _content(slices[0]):
                plan.update.append(want)
        else:
            creates.append(want)
    spare.sort(key=lambda s: s.name)
    for want in creates:
        if spare:
            plan.update.append(_reuse(spare.pop(0), want))
        elif ep.metadata.deletion_timestamp is None:
            plan.create.append(want)
    plan.delete = sorted(s.name for s in spare)
    plan.update.sort(key=lambda s: s.name)
    return plan
