"""An agent that restarts adopts its pods with the readiness the store last reported.

Kubelet-style probes start a new container not ready; an adopted process is
not new, and resetting it would empty its Services' Endpoints until the first
probe passed. It keeps its last known readiness until a probe says otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path
from typing import Any, cast

import pytest
from tests.support.node import NodeHarness, server_pod

from shiftnet.api import Pod, parse_object

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def get(ip: str, path: str) -> str:
    with socket.create_connection((ip, 8080), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    return data.decode()


async def test_adopted_pods_keep_their_readiness_until_a_probe_says_otherwise(
    tmp_path: Path,
) -> None:
    h = NodeHarness(tmp_path)
    try:
        await h.start(stop_pods_on_exit=False)
        for name in ("healthy", "sick"):
            await h.client.create(server_pod(name))
        sick = await h.wait_ready("sick")
        healthy = await h.wait_ready("healthy")
        await h.stop_agent()
        assert sick.status.pod_ip and healthy.status.pod_ip
        assert "200" in get(sick.status.pod_ip, "/fail").splitlines()[0]  # while no agent runs
        revision = await h.store.revision()
        await h.start()
        # Right after the restart both are still ready: the store said so last.
        for name in ("healthy", "sick"):
            pod = await h.client.get(Pod, "default", name)
            assert pod.ready, f"{name} was reset to not ready on adoption"
        # The failing pod's probes (failureThreshold 3, period 1 s) take it out ...
        gone = await h.wait_pod("sick", lambda p: not p.ready)
        assert gone.status.container_statuses[0].restart_count == 0
        # ... and the healthy one was never written as not ready.
        events: list[dict[str, Any]] = []

        async def collect() -> None:
            async for ev in h.store.watch("pods", revision, "default"):
                events.append(ev.object)

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(collect(), 1.0)  # the history since the restart
        assert any(o["metadata"]["name"] == "sick" for o in events)
        healthy_states = [
            cast(Pod, parse_object(o)).ready for o in events if o["metadata"]["name"] == "healthy"
        ]
        assert all(healthy_states), healthy_states
    finally:
        await h.close()
