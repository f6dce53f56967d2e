"""A Service's EndpointSlices seen as one Endpoints object: the input proxy, router and DNS share.

The components were built on Endpoints (ready ``addresses``, ``notReadyAddresses``);
EndpointSlices carry more (``serving``, ``terminating``) and come in parts. This
pure function joins the parts into that one shape, so each component reads
slices through the code it already trusts:

* an endpoint that is ``ready`` is an address; any other is a not-ready address;
* with ``terminating_fallback`` (the service proxy), a port of the Service
  that has no ready endpoint in any slice takes the endpoints that are
  ``serving`` and ``terminating`` as its addresses instead, as kube-proxy
  does: a pod being deleted keeps answering until something ready replaces
  it, so a rolling restart drops no connection;
* FQDN slices and ports without a number are left out (nothing routes to them).

Deterministic: slices by name, endpoints in slice order.
"""

from __future__ import annotations

from collections.abc import Iterable

from shiftnet.api.base import ObjectMeta
from shiftnet.api.core import EndpointAddress, EndpointPort, Endpoints, EndpointSubset
from shiftnet.api.discovery import Endpoint, EndpointSlice


def _addresses(endpoints: Iterable[Endpoint]) -> list[EndpointAddress]:
    return [
        EndpointAddress(ip=ip, hostname=e.hostname, node_name=e.node_name, target_ref=e.target_ref)
        for e in endpoints
        for ip in e.addresses
    ]


def _ports(es: EndpointSlice) -> list[EndpointPort]:
    return [
        EndpointPort(name=p.name or None, port=p.port, protocol=p.protocol or "TCP")
        for p in es.ports
        if p.port is not None
    ]


def _subset(
    ports: list[EndpointPort], members: list[Endpoint], others: list[Endpoint]
) -> EndpointSubset | None:
    if not members and not others:
        return None
    return EndpointSubset(
        addresses=_addresses(members), not_ready_addresses=_addresses(others), ports=ports
    )


def endpoints_from_slices(
    namespace: str,
    service: str,
    slices: Iterable[EndpointSlice],
    *,
    terminating_fallback: bool = False,
) -> Endpoints:
    """The Endpoints view of one Service's slices (see the module docstring)."""
    usable = sorted((s for s in slices if s.address_type in ("IPv4", "IPv6")), key=lambda s: s.name)
    with_ready: set[str] = set()  # port names some ready endpoint serves
    if terminating_fallback:
        for es in usable:
            if any(e.conditions.is_ready for e in es.endpoints):
                with_ready.update(p.name or "" for p in es.ports)
    subsets: list[EndpointSubset] = []
    for es in usable:
        ports = _ports(es)
        ready = [e for e in es.endpoints if e.conditions.is_ready]
        not_ready = [e for e in es.endpoints if not e.conditions.is_ready]
        fallback = [p for p in ports if terminating_fallback and (p.name or "") not in with_ready]
        normal = [p for p in ports if p not in fallback]
        if normal or not ports:
            subset = _subset(normal, ready, not_ready)
            if subset is not None:
                subsets.append(subset)
        if fallback:
            going = [
                e for e in not_ready if e.conditions.is_serving and e.conditions.is_terminating
            ]
            rest = [e for e in not_ready if e not in going]
            subset = _subset(fallback, going, rest)
            if subset is not None:
                subsets.append(subset)
    return Endpoints(
        metadata=ObjectMeta(name=service, namespace=namespace),
        subsets=subsets,
    )
