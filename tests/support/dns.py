"""Builders for the Services and Endpoints the DNS tests feed in, and a query helper."""

from __future__ import annotations

from typing import Any

import dns.message
import dns.query
import dns.rdatatype

from shiftnet.api import Endpoints, Service


def service(
    name: str,
    namespace: str = "default",
    cluster_ip: str | None = "127.30.0.10",
    ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> Service:
    body: dict[str, Any] = {"ports": ports if ports is not None else []}
    if cluster_ip is not None:
        body["clusterIP"] = cluster_ip
    body.update(spec)
    return Service.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": body}
    )


def headless(name: str, namespace: str = "default", **spec: Any) -> Service:
    return service(name, namespace, cluster_ip="None", **spec)


def endpoints(
    name: str,
    namespace: str = "default",
    addresses: list[dict[str, Any]] | None = None,
    not_ready: list[dict[str, Any]] | None = None,
    ports: list[dict[str, Any]] | None = None,
) -> Endpoints:
    subset: dict[str, Any] = {
        "addresses": addresses or [],
        "notReadyAddresses": not_ready or [],
        "ports": ports or [],
    }
    subsets = [subset] if (addresses or not_ready) else []
    return Endpoints.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "subsets": subsets}
    )


def ask(
    port: int, name: str, rdtype: str = "A", *, host: str = "127.0.0.1", tcp: bool = False
) -> dns.message.Message:
    """One query with dnspython (UDP, or TCP), 2 s timeout."""
    q = dns.message.make_query(name, dns.rdatatype.from_text(rdtype))
    if tcp:
        return dns.query.tcp(q, host, port=port, timeout=2)
    return dns.query.udp(q, host, port=port, timeout=2)
