"""Helpers for proxy tests: write Services/Endpoints through the Client, wait for syncs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from shiftnet.api import Endpoints, EndpointSlice, Service
from shiftnet.client import Client


def service(
    name: str,
    cluster_ip: str,
    port: int,
    *,
    protocol: str = "TCP",
    affinity_timeout: int | None = None,
    namespace: str = "default",
    extra_ports: Sequence[dict[str, object]] = (),
) -> Service:
    spec: dict[str, object] = {
        "clusterIP": cluster_ip,
        "selector": {"app": name},
        "ports": [{"name": "main", "port": port, "protocol": protocol}, *extra_ports],
    }
    if affinity_timeout is not None:
        spec["sessionAffinity"] = "ClientIP"
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": affinity_timeout}}
    return Service.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec}
    )


def endpoints(
    name: str,
    addresses: Sequence[tuple[str, int]],
    *,
    protocol: str = "TCP",
    namespace: str = "default",
) -> Endpoints:
    """One subset per distinct port (ready addresses)."""
    by_port: dict[int, list[str]] = {}
    for ip, port in addresses:
        by_port.setdefault(port, []).append(ip)
    subsets = [
        {
            "addresses": [{"ip": ip} for ip in ips],
            "ports": [{"name": "main", "port": port, "protocol": protocol}],
        }
        for port, ips in sorted(by_port.items())
    ]
    return Endpoints.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "subsets": subsets}
    )


def endpoint_slice(
    name: str,
    addresses: Sequence[tuple[str, int]],
    *,
    port_name: str = "main",
    namespace: str = "default",
) -> EndpointSlice:
    """One IPv4 slice of Service ``name``: ready endpoints, one port (all share it)."""
    ports = sorted({port for _, port in addresses})
    assert len(ports) == 1, "one port a slice"
    return EndpointSlice.model_validate(
        {
            "metadata": {
                "name": f"{name}-s1",
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": name},
            },
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": [ip], "conditions": {"ready": True}} for ip, _ in addresses
            ],
            "ports": [{"name": port_name, "port": ports[0], "protocol": "TCP"}],
        }
    )


async def put(client: Client, obj: Service | Endpoints | EndpointSlice) -> None:
    """Create or replace (unconditionally) an object."""
    existing = await client.try_get(type(obj), obj.metadata.namespace, obj.metadata.name)
    if existing is None:
        await client.create(obj)
    else:
        obj.metadata.resource_version = existing.metadata.resource_version
        await client.update(obj)


async def wait_until(
    pred: Callable[[], bool], timeout: float = 10, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def backends_of(proxy, namespace: str, name: str) -> set[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return {(b.ip, b.port) for e in proxy.table.for_service(namespace, name) for b in e.backends}
