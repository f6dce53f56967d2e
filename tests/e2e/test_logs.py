"""``shiftnet logs`` against pods run by a real node agent: whole file, --tail, -f, -c."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET
from tests.support.node import NodeHarness, script_pod

from shiftnet.api import Pod, parse_object

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


def logs_cmd(h: NodeHarness, *args: str) -> list[str]:
    return [
        SHIFTNET,
        "--store",
        f"sqlite://{h.state_dir}/state.db",
        "--state-dir",
        str(h.state_dir),
        "logs",
        *args,
    ]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}


async def run(h: NodeHarness, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, logs_cmd(h, *args), capture_output=True, text=True, env=env(), timeout=60
    )


async def test_logs_tail_follow_and_pod_deletion(node: NodeHarness) -> None:
    script = (
        "import itertools,time\n"
        "for i in itertools.count():\n"
        "    print(f'line {i}', flush=True)\n"
        "    time.sleep(0.2)\n"
    )
    await node.client.create(script_pod("ticker", script))
    await node.wait_ready("ticker")
    await asyncio.sleep(1.0)
    full = await run(node, "ticker")
    assert full.returncode == 0, full.stderr
    assert full.stdout.startswith("line 0\n")
    tail = await run(node, "ticker", "--tail", "2")
    assert len(tail.stdout.splitlines()) == 2

    follow = subprocess.Popen(
        logs_cmd(node, "ticker", "-f", "--tail", "0"), stdout=subprocess.PIPE, text=True, env=env()
    )
    try:
        assert follow.stdout is not None
        first = await asyncio.to_thread(follow.stdout.readline)
        assert first.startswith("line ")
        second = await asyncio.to_thread(follow.stdout.readline)
        assert int(second.split()[1]) == int(first.split()[1]) + 1
        await node.client.delete(Pod, "default", "ticker")
        rest = await asyncio.to_thread(follow.communicate, timeout=30)
        assert 'pod "ticker" was deleted' in rest[0]
        assert follow.returncode == 0
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()


async def test_logs_errors_are_one_sentence(node: NodeHarness) -> None:
    pod = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "two", "namespace": "default"},
            "spec": {
                "nodeName": "node-a",
                "containers": [
                    {
                        "name": "a",
                        "command": [
                            sys.executable,
                            "-c",
                            "print('from a', flush=True); import time; time.sleep(60)",
                        ],
                    },
                    {
                        "name": "b",
                        "command": [
                            sys.executable,
                            "-c",
                            "print('from b', flush=True); import time; time.sleep(60)",
                        ],
                    },
                ],
            },
        }
    )
    await node.client.create(pod)  # type: ignore[arg-type]
    p = await node.wait_ready("two")
    assert [c.name for c in p.status.container_statuses] == ["a", "b"]
    assert all(c.ready for c in p.status.container_statuses)
    res = await run(node, "two")
    assert res.returncode == 1
    assert (
        res.stderr.strip()
        == 'error: a container name must be specified for pod "two", choose one of: [a b]'
    )
    got_b = await run(node, "two", "-c", "b")
    assert got_b.stdout == "from b\n"
    missing = await run(node, "nope")
    assert missing.returncode == 1 and 'pods "nope" not found' in missing.stderr
