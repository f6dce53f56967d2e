"""Pure: which Endpoints a Service with a selector should have, given the pods.

Rules (Kubernetes' endpoints controller, where it is explicit):

* pods of the Service's namespace whose labels match ``spec.selector``;
* a pod needs a ``status.podIP``; pods that finished (phase Succeeded or
  Failed) or are being deleted (``deletionTimestamp``) are left out;
* Ready pods (condition ``Ready=True``) go under ``addresses``, the others
  under ``notReadyAddresses``, unless the Service sets
  ``publishNotReadyAddresses``, which puts every pod under ``addresses``;
* each Service port's ``targetPort`` is resolved per pod: a number is used as
  is, a name is looked up among the pod's container ports with the same name
  and protocol; a pod lacking that name gets no endpoint for that port;
* pods with the same resolved port set share one subset;
* an address carries ``targetRef`` (the pod), ``nodeName``, and ``hostname``
  when the pod's ``hostname`` is set and its ``subdomain`` is the Service's
  name (the headless-Service DNS rule).

Order is deterministic: addresses by IP (numerically) then pod name, ports by
name then number, subsets by their ports.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from shiftnet.api import EndpointAddress, EndpointPort, Endpoints, EndpointSubset, Pod, Service
from shiftnet.api.core import ObjectReference
from shiftnet.api.names import is_digits
from shiftnet.api.selectors import Selector

PortSet = tuple[tuple[str, int, str], ...]  # (name, port, protocol), sorted

# Marks Endpoints this controller wrote, so after a restart it knows which
# leftovers (their Service deleted meanwhile) are its to delete, and never
# deletes Endpoints a user wrote.
MANAGED_BY = "shiftnet.io/managed-by"
CONTROLLER = "endpoints-controller"


def has_selector(svc: Service) -> bool:
    """An absent or empty selector means "endpoints are managed by the user"."""
    return bool(svc.spec.selector)


def selects(svc: Service, pod: Pod) -> bool:
    if not has_selector(svc) or (pod.namespace or "") != (svc.namespace or ""):
        return False
    return Selector.from_labels(svc.spec.selector or {}).matches(pod.metadata.labels)


def resolve_port(pod: Pod, target: int | str, protocol: str) -> int | None:
    """The pod port a Service targetPort means, or None when the pod has no such name."""
    if isinstance(target, int):
        return target
    if is_digits(target):
        return int(target)
    for c in pod.spec.containers:
        for p in c.ports:
            if p.name == target and p.protocol == protocol:
                return p.container_port
    return None


def _ip_key(ip: str) -> tuple[int, int, str]:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return (9, 0, ip)
    return (addr.version, int(addr), ip)


def _address(svc: Service, pod: Pod) -> EndpointAddress:
    hostname = None
    if pod.spec.hostname and pod.spec.subdomain == svc.name:
        hostname = pod.spec.hostname
    return EndpointAddress(
        ip=pod.status.pod_ip or "",
        hostname=hostname,
        node_name=pod.spec.node_name,
        target_ref=ObjectReference(
            kind="Pod", namespace=pod.namespace, name=pod.name, uid=pod.metadata.uid
        ),
    )


def eligible(pod: Pod) -> bool:
    return (
        bool(pod.status.pod_ip)
        and pod.status.phase not in ("Succeeded", "Failed")
        and not pod.metadata.deletion_timestamp
    )


def desired_subsets(svc: Service, pods: Iterable[Pod]) -> list[EndpointSubset]:
    groups: dict[PortSet, tuple[list[EndpointAddress], list[EndpointAddress]]] = {}
    for pod in pods:
        if not selects(svc, pod) or not eligible(pod):
            continue
        ports: list[tuple[str, int, str]] = []
        for sp in svc.spec.ports:
            n = resolve_port(pod, sp.effective_target_port, sp.protocol)
            if n is not None:
                ports.append((sp.name or "", n, sp.protocol))
        if svc.spec.ports and not ports:
            continue  # nothing of this pod is reachable through the Service
        key: PortSet = tuple(sorted(set(ports)))
        ready, not_ready = groups.setdefault(key, ([], []))
        addr = _address(svc, pod)
        (ready if pod.ready or svc.spec.publish_not_ready_addresses else not_ready).append(addr)

    def addr_key(a: EndpointAddress) -> tuple[tuple[int, int, str], str]:
        return (_ip_key(a.ip), a.target_ref.name or "" if a.target_ref else "")

    subsets = []
    for key in sorted(groups):
        ready, not_ready = groups[key]
        subsets.append(
            EndpointSubset(
                addresses=sorted(ready, key=addr_key),
                not_ready_addresses=sorted(not_ready, key=addr_key),
                ports=[EndpointPort(name=n or None, port=p, protocol=proto) for n, p, proto in key],
            )
        )
    return subsets


def desired_endpoints(svc: Service, pods: Iterable[Pod]) -> Endpoints:
    """The whole Endpoints object (named as the Service, carrying its labels)."""
    ep = Endpoints.model_validate(
        {
            "metadata": {
                "name": svc.name,
                "namespace": svc.namespace,
                "labels": dict(sorted(svc.metadata.labels.items())),
                "annotations": {MANAGED_BY: CONTROLLER},
            }
        }
    )
    ep.subsets = desired_subsets(svc, pods)
    return ep


def same_content(a: Endpoints, b: Endpoints) -> bool:
    """Equal as far as this controller cares (subsets, labels, the managed-by mark)."""
    return (
        [s.to_dict() for s in a.subsets] == [s.to_dict() for s in b.subsets]
        and a.metadata.labels == b.metadata.labels
        and managed(a) == managed(b)
    )


def managed(ep: Endpoints) -> bool:
    """Written by this controller (not by a user)."""
    return ep.metadata.annotations.get(MANAGED_BY) == CONTROLLER
