"""Graceful pod deletion through a Kubernetes API (the ``kube`` store, our API server).

The API server marks the pod terminating; the node agent, reaching the
cluster only through that API, stops the pod and removes it with a grace
period of 0, as a kubelet does (a plain delete of a terminating pod changes
nothing there).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from tests.support.node import pid_alive, script_pod, wait_for
from tests.support.stores import start_apiserver

from shiftnet.api import HostSubnet, Pod
from shiftnet.client import Client
from shiftnet.sdn.agent import NodeAgent
from shiftnet.sdn.config import NodeConfig
from shiftnet.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


async def test_a_pod_deleted_through_the_api_is_stopped_then_removed(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    api = start_apiserver(request, tmp_path / "apiserver")
    store = open_store(f"kube://{api.kubeconfig}")
    client = Client(store)
    agent: NodeAgent | None = None
    try:
        await client.create(
            HostSubnet(
                metadata={"name": "node-k"},  # type: ignore[arg-type]
                host="node-k",
                host_ip="127.0.0.1",
                subnet="127.10.11.0/24",
            )
        )
        config = NodeConfig(node_name="node-k", state_dir=tmp_path / "node", heartbeat_seconds=2.0)
        agent = NodeAgent(open_store(f"kube://{api.kubeconfig}"), config)
        await agent.start()
        await agent.wait_for_subnet(15)
        marker = tmp_path / "up"
        script = (
            "import pathlib,signal,sys,time;"
            "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1), sys.exit(0)));"
            f"pathlib.Path({str(marker)!r}).touch(); time.sleep(300)"
        )
        check = f"import os,sys; sys.exit(0 if os.path.exists({str(marker)!r}) else 1)"
        pod = script_pod(
            "drain",
            script,
            node="node-k",
            grace=30,
            probe={"exec": {"command": [sys.executable, "-c", check]}, "periodSeconds": 1},
        )
        await client.create(pod)

        async def ready() -> Pod | None:
            p = await client.try_get(Pod, "default", "drain")
            return p if p is not None and p.ready else None

        await wait_for(ready, timeout=20, what="pod ready")
        [pid] = agent.pod_pids()[("default", "drain")]
        marked = await client.delete(Pod, "default", "drain")
        assert marked.metadata.deletion_timestamp  # the API server kept it, terminating
        await wait_for(lambda: asyncio.sleep(0, not pid_alive(pid)), timeout=15, what="stopped")

        async def gone() -> bool:
            return await client.try_get(Pod, "default", "drain") is None

        await wait_for(gone, timeout=15, what="pod object removed by the agent")
    finally:
        if agent is not None:
            await agent.stop()
            await agent.store.close()
        await store.close()
