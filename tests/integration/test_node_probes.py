"""Readiness probes of each kind against real pod processes, thresholds included."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.node import NodeHarness, script_pod, server_pod

from shiftnet.api import Probe

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


async def http(ip: str, path: str) -> None:
    reader, writer = await asyncio.open_connection(ip, 8080)
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    await reader.read()
    writer.close()


async def test_tcp_socket_probe(node: NodeHarness) -> None:
    probe = {"tcpSocket": {"port": "web"}, "periodSeconds": 1}
    await node.client.create(server_pod("tcp-ok", probe=probe))
    await node.wait_ready("tcp-ok")
    # A port nobody listens on never becomes ready, yet the pod runs.
    await node.client.create(
        script_pod(
            "tcp-closed",
            "import time; time.sleep(300)",
            probe={"tcpSocket": {"port": 9}, "periodSeconds": 1},
        )
    )
    p = await node.wait_pod(
        "tcp-closed",
        lambda p: p.status.phase == "Running" and p.status.container_statuses[0].started is True,
    )
    await asyncio.sleep(2.5)
    p = await node.client.get(type(p), "default", "tcp-closed")
    assert not p.ready
    assert p.status.phase == "Running"


async def test_http_get_probe_follows_the_status_code(node: NodeHarness) -> None:
    await node.client.create(server_pod("http"))
    p = await node.wait_ready("http")
    ip = p.status.pod_ip or ""
    await http(ip, "/fail")  # /healthz answers 503 from now on
    await node.wait_pod("http", lambda p: not p.ready)
    await http(ip, "/recover")
    await node.wait_ready("http")


async def test_exec_probe_and_failure_threshold(node: NodeHarness, tmp_path: Path) -> None:
    flag = tmp_path / "healthy"
    flag.touch()
    check = f"import os,sys; sys.exit(0 if os.path.exists({str(flag)!r}) else 1)"
    probe = {
        "exec": {"command": [sys.executable, "-c", check]},
        "periodSeconds": 1,
        "failureThreshold": 3,
    }
    await node.client.create(script_pod("exec", "import time; time.sleep(300)", probe=probe))
    await node.wait_ready("exec")
    flag.unlink()
    # One or two failed probes (< failureThreshold) leave the pod ready.
    await asyncio.sleep(1.2)
    assert (await node.pod("exec")).ready  # type: ignore[union-attr]
    p = await node.wait_pod("exec", lambda p: not p.ready)
    assert p.status.phase == "Running"
    flag.touch()
    await node.wait_ready("exec")


async def test_initial_delay_and_success_threshold(node: NodeHarness) -> None:
    probe = {
        "httpGet": {"path": "/healthz", "port": "web"},
        "initialDelaySeconds": 2,
        "periodSeconds": 1,
        "successThreshold": 2,
    }
    await node.client.create(server_pod("slow", probe=probe))
    await node.wait_pod("slow", lambda p: p.status.phase == "Running")
    # No probe runs during the initial delay, and one success is not enough.
    await asyncio.sleep(1.5)
    assert not (await node.pod("slow")).ready  # type: ignore[union-attr]
    await node.wait_ready("slow")


async def test_pod_without_probe_is_ready_once_running(node: NodeHarness) -> None:
    await node.client.create(script_pod("plain", "import time; time.sleep(300)"))
    p = await node.wait_ready("plain")
    assert p.status.container_statuses[0].ready
    assert "running" in p.status.container_statuses[0].state


async def test_liveness_failure_restarts_the_container(node: NodeHarness, tmp_path: Path) -> None:
    flag = tmp_path / "alive"
    flag.touch()
    check = f"import os,sys; sys.exit(0 if os.path.exists({str(flag)!r}) else 1)"
    pod = script_pod("live", "import time; time.sleep(300)", grace=1)
    pod.spec.containers[0].liveness_probe = Probe.model_validate(
        {
            "exec": {"command": [sys.executable, "-c", check]},
            "periodSeconds": 1,
            "failureThreshold": 2,
        }
    )
    await node.client.create(pod)
    await node.wait_ready("live")
    [pid] = node.pids("live")
    await asyncio.sleep(1.5)
    assert node.pids("live") == [pid], "a passing liveness probe leaves the container alone"
    flag.unlink()
    await node.wait_pod("live", lambda p: p.status.container_statuses[0].restart_count >= 1)
    flag.touch()  # the restarted container passes again and stays
    p = await node.wait_ready("live")
    assert p.status.container_statuses[0].restart_count >= 1
    assert node.pids("live") and node.pids("live") != [pid]
