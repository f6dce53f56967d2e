"""Graceful pod deletion on real processes: the object outlives its processes, then goes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.node import NodeHarness, pid_alive, script_pod, wait_for

from shiftnet.api import Pod

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


def draining_pod(name: str, marker: Path, drain: float, grace: int) -> Pod:
    """Exits ``drain`` seconds after SIGTERM (as a server finishing its requests)."""
    script = (
        "import pathlib,signal,sys,time;"
        f"signal.signal(signal.SIGTERM, lambda *_: (time.sleep({drain}), sys.exit(0)));"
        f"pathlib.Path({str(marker)!r}).touch(); time.sleep(300)"
    )
    check = f"import os,sys; sys.exit(0 if os.path.exists({str(marker)!r}) else 1)"
    probe = {"exec": {"command": [sys.executable, "-c", check]}, "periodSeconds": 1}
    return script_pod(name, script, grace=grace, probe=probe)


async def test_a_deleted_pod_stays_terminating_until_its_processes_are_gone(
    node: NodeHarness, tmp_path: Path
) -> None:
    await node.client.create(draining_pod("drain", tmp_path / "up", drain=2.0, grace=20))
    await node.wait_ready("drain")
    [pid] = node.pids("drain")
    marked = await node.client.delete(Pod, "default", "drain")
    assert marked.metadata.deletion_timestamp
    assert marked.metadata.deletion_grace_period_seconds == 20
    await asyncio.sleep(1.0)
    during = await node.pod("drain")
    assert during is not None and during.metadata.deletion_timestamp, "removed too early"
    assert during.ready, "a draining pod keeps its last readiness (it is still serving)"
    assert pid_alive(pid)
    await wait_for(
        lambda: asyncio.sleep(0, not pid_alive(pid)), timeout=10, what="process exits after drain"
    )
    await wait_for(lambda: _gone(node, "drain"), timeout=10, what="pod object removed")


async def _gone(node: NodeHarness, name: str) -> bool:
    return await node.pod(name) is None


async def test_the_pods_grace_period_is_the_deadline(node: NodeHarness, tmp_path: Path) -> None:
    # drains for 30 s, but a delete asking 1 s of grace kills it after 1 s
    await node.client.create(draining_pod("slow", tmp_path / "up", drain=30.0, grace=60))
    await node.wait_ready("slow")
    [pid] = node.pids("slow")
    await node.client.delete(Pod, "default", "slow", grace_period=1)
    await wait_for(lambda: asyncio.sleep(0, not pid_alive(pid)), timeout=10, what="SIGKILL")
    await wait_for(lambda: _gone(node, "slow"), timeout=10, what="pod object removed")


async def test_grace_period_zero_and_podless_nodes_remove_at_once(
    node: NodeHarness, tmp_path: Path
) -> None:
    await node.client.create(draining_pod("now", tmp_path / "up", drain=3.0, grace=60))
    await node.wait_ready("now")
    gone = await node.client.delete(Pod, "default", "now", grace_period=0)
    assert not gone.metadata.deletion_timestamp
    assert await node.pod("now") is None  # (its processes stop as a pod gone from the store)
    # scheduled to a node that does not exist: nothing would ever stop it
    await node.client.create(script_pod("lost", "pass", node="node-zz"))
    await node.client.delete(Pod, "default", "lost")
    assert await node.pod("lost") is None
