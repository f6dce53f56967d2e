"""Helpers for tests of the master controllers: a running Master, object builders, polling."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from shiftnet.api import Node, Pod, Service, parse_object
from shiftnet.client import Client
from shiftnet.master import Master, MasterConfig
from shiftnet.store import open_store

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]], check: Callable[[T], bool], timeout: float = 10.0
) -> T:
    """Poll ``probe`` until ``check`` holds; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if check(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {timeout}s; last value: {value!r}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running_master(
    store_url: str, config: MasterConfig | None = None
) -> AsyncIterator[tuple[Master, Client]]:
    """A started Master on its own store connection, and a Client on another."""
    mstore = open_store(store_url)
    cstore = open_store(store_url)
    master = Master(mstore, config or MasterConfig())
    try:
        await master.start()
        yield master, Client(cstore)
    finally:
        await master.stop()
        await mstore.close()
        await cstore.close()


def service(
    name: str,
    ns: str = "default",
    *,
    cluster_ip: str | None = None,
    selector: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> Service:
    body: dict[str, Any] = {"ports": ports or [{"port": 80}], **spec}
    if cluster_ip is not None:
        body["clusterIP"] = cluster_ip
    if selector is not None:
        body["selector"] = selector
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": body,
        }
    )
    assert isinstance(obj, Service)
    return obj


def pod(
    name: str,
    ip: str | None,
    *,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    ready: bool = True,
    ports: list[dict[str, Any]] | None = None,
    node: str | None = "node-a",
    phase: str = "Running",
    hostname: str | None = None,
    subdomain: str | None = None,
) -> Pod:
    """A Pod with the status a node agent would have written."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "command": ["true"], "ports": ports or []}],
    }
    if node:
        spec["nodeName"] = node
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip:
        status["podIP"] = ip
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": spec,
            "status": status,
        }
    )
    assert isinstance(obj, Pod)
    return obj


def node(name: str, ip: str = "127.0.0.1", *, ready: bool = True) -> Node:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {
                "addresses": [{"type": "InternalIP", "address": ip}],
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )
    assert isinstance(obj, Node)
    return obj
