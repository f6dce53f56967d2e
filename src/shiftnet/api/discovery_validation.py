"""discovery.k8s.io/v1 rules: an EndpointSlice's address type, endpoints and ports.

The limits are Kubernetes' own (1,000 endpoints and 100 ports a slice, 100
addresses an endpoint); addresses must be of the slice's ``addressType``.
"""

from __future__ import annotations

import ipaddress

from shiftnet.api import names
from shiftnet.api.core_validation import port_errors, protocol_errors
from shiftnet.api.discovery import ADDRESS_TYPES, Endpoint, EndpointSlice
from shiftnet.api.fielderrors import (
    FieldError,
    duplicate,
    invalid,
    join,
    not_supported,
    required,
    too_many,
)

MAX_ENDPOINTS = 1000
MAX_PORTS = 100
MAX_ADDRESSES = 100


def _address_errors(address_type: str, path: str, value: str) -> list[FieldError]:
    if address_type == "FQDN":
        return [invalid(path, value, r) for r in names.dns1123_subdomain_errors(value)[:1]]
    try:
        if "%" in value:
            raise ValueError(value)
        ip = ipaddress.ip_address(value)
    except ValueError:
        return [invalid(path, value, f"must be a valid {address_type} address")]
    if (ip.version == 4) != (address_type == "IPv4"):
        return [invalid(path, value, f"must be a valid {address_type} address")]
    return []


def _endpoint_errors(address_type: str, ep: Endpoint, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if not ep.addresses:
        out.append(required(join(path, "addresses"), "must contain at least 1 address"))
    elif len(ep.addresses) > MAX_ADDRESSES:
        out.append(too_many(join(path, "addresses"), len(ep.addresses), MAX_ADDRESSES))
    for i, address in enumerate(ep.addresses[:MAX_ADDRESSES]):
        out += _address_errors(address_type, join(path, "addresses", i), address)
    if ep.hostname:
        out += [
            invalid(join(path, "hostname"), ep.hostname, r)
            for r in names.dns1123_label_errors(ep.hostname)[:1]
        ]
    if ep.node_name:
        out += [
            invalid(join(path, "nodeName"), ep.node_name, r)
            for r in names.dns1123_subdomain_errors(ep.node_name)[:1]
        ]
    return out


def endpoint_slice_errors(es: EndpointSlice) -> list[FieldError]:
    out: list[FieldError] = []
    if not es.address_type:
        out.append(required("addressType"))
    elif es.address_type not in ADDRESS_TYPES:
        out.append(not_supported("addressType", es.address_type, ADDRESS_TYPES))
    if len(es.endpoints) > MAX_ENDPOINTS:
        out.append(too_many("endpoints", len(es.endpoints), MAX_ENDPOINTS))
    if es.address_type in ADDRESS_TYPES:
        for i, ep in enumerate(es.endpoints[:MAX_ENDPOINTS]):
            out += _endpoint_errors(es.address_type, ep, join("endpoints", i))
    if len(es.ports) > MAX_PORTS:
        out.append(too_many("ports", len(es.ports), MAX_PORTS))
    seen: set[str] = set()
    for i, port in enumerate(es.ports[:MAX_PORTS]):
        path = join("ports", i)
        name = port.name or ""
        if name:
            out += [
                invalid(join(path, "name"), name, r) for r in names.dns1123_label_errors(name)[:1]
            ]
        if name in seen:
            out.append(duplicate(join(path, "name"), name))
        seen.add(name)
        if port.port is not None:
            out += port_errors(join(path, "port"), port.port)
        if port.protocol is not None:
            out += protocol_errors(join(path, "protocol"), port.protocol)
    return out
