"""Master + node agent on real processes: pods become Endpoints, and leave them.

3 pods and a Service; the Endpoints
list the 3 pod IPs once ready; a killed pod process leaves ``addresses``,
restarts and comes back; a pod whose labels change leaves the Endpoints.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.node import NodeHarness, server_pod, wait_for

from shiftnet.api import Endpoints, Pod, parse_object

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path, with_master=True)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


def service(name: str = "web") -> object:
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": "web"}],
            },
        }
    )


async def addresses(h: NodeHarness, name: str = "web") -> tuple[set[str], set[str]]:
    ep = await h.client.try_get(Endpoints, "default", name)
    if ep is None:
        return set(), set()
    ready = {a.ip for s in ep.subsets for a in s.addresses}
    not_ready = {a.ip for s in ep.subsets for a in s.not_ready_addresses}
    return ready, not_ready


async def test_three_pods_service_endpoints_follow_readiness_and_labels(
    cluster: NodeHarness,
) -> None:
    h = cluster
    await h.client.create(service())  # type: ignore[arg-type]
    # Unscheduled pods: the master's scheduler puts them on our node.
    for i in range(3):
        await h.client.create(server_pod(f"web-{i}", node=None))
    pods = [await h.wait_ready(f"web-{i}") for i in range(3)]
    assert all(p.spec.node_name == "node-a" for p in pods)
    ips = {p.status.pod_ip or "" for p in pods}
    assert len(ips) == 3

    async def all_listed() -> bool:
        return (await addresses(h))[0] == ips

    started = time.monotonic()
    await wait_for(all_listed, timeout=10, what="3 pod IPs in Endpoints")
    print(f"endpoints complete {time.monotonic() - started:.3f}s after the last pod was ready")
    ep = await h.client.get(Endpoints, "default", "web")
    assert [p.port for s in ep.subsets for p in s.ports] == [8080]  # named targetPort resolved

    # Kill one pod's process: it leaves addresses, restarts, comes back.
    victim = pods[0]
    [pid] = h.pids(victim.name)
    os.kill(pid, signal.SIGKILL)

    async def victim_gone() -> bool:
        return victim.status.pod_ip not in (await addresses(h))[0]

    await wait_for(victim_gone, timeout=10, what="killed pod out of addresses")
    restarted = await h.wait_pod(
        victim.name, lambda p: p.ready and p.status.container_statuses[0].restart_count >= 1
    )
    assert restarted.status.pod_ip == victim.status.pod_ip
    await wait_for(all_listed, timeout=10, what="restarted pod back in addresses")

    # Relabel one pod: it leaves the Endpoints entirely (not even notReady).
    moved = pods[1]

    def relabel(p: Pod) -> Pod:
        p.metadata.labels = {"app": "elsewhere"}
        return p

    await h.client.mutate(Pod, "default", moved.name, relabel)

    async def moved_out() -> bool:
        ready, not_ready = await addresses(h)
        return ready == ips - {moved.status.pod_ip or ""} and not not_ready

    await wait_for(moved_out, timeout=10, what="relabelled pod out of Endpoints")
    # The process itself keeps running: labels do not touch pods.
    assert h.pids(moved.name)


async def test_failing_readiness_moves_pod_to_not_ready_addresses(cluster: NodeHarness) -> None:
    h = cluster
    await h.client.create(service())  # type: ignore[arg-type]
    await h.client.create(server_pod("flip"))
    p = await h.wait_ready("flip")
    ip = p.status.pod_ip or ""
    await wait_for(lambda: _has(h, ip, ready=True), timeout=10, what="ready address")
    # podserver's /fail makes its /healthz answer 503 from now on.
    reader, writer = await asyncio.open_connection(ip, 8080)
    writer.write(b"GET /fail HTTP/1.0\r\n\r\n")
    await writer.drain()
    await reader.read()
    writer.close()
    await wait_for(lambda: _has(h, ip, ready=False), timeout=10, what="not-ready address")
    pod = await h.client.get(Pod, "default", "flip")
    assert not pod.ready and pod.status.phase == "Running"


async def _has(h: NodeHarness, ip: str, *, ready: bool) -> bool:
    r, nr = await addresses(h)
    return ip in r if ready else (ip in nr and ip not in r)


async def test_pod_delete_removes_endpoint_and_process(cluster: NodeHarness) -> None:
    h = cluster
    await h.client.create(service())  # type: ignore[arg-type]
    await h.client.create(server_pod("gone"))
    p = await h.wait_ready("gone")
    ip = p.status.pod_ip or ""
    await wait_for(lambda: _has(h, ip, ready=True), timeout=10, what="ready address")
    [pid] = h.pids("gone")
    await h.client.delete(Pod, "default", "gone")

    async def cleared() -> bool:
        r, nr = await addresses(h)
        return ip not in r and ip not in nr

    await wait_for(cleared, timeout=10, what="address removed")
    await wait_for(lambda: asyncio.sleep(0, not Path(f"/proc/{pid}").exists()), what="process gone")
