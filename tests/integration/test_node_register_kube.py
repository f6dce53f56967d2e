"""A node agent registering through a Kubernetes API, as a kubelet does.

The Node is created with its status (addresses, the Ready condition) in one
write, which the server keeps as upstream's node strategy does: no reader,
the master included, ever sees the Node without its conditions, and no
second write can race the master's. What the master writes afterwards (its
NetworkUnavailable condition) is kept by the agent's heartbeats.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.support.stores import start_apiserver

from shiftnet.api import HostSubnet, Node
from shiftnet.client import Client
from shiftnet.sdn.agent import NodeAgent
from shiftnet.sdn.config import NodeConfig
from shiftnet.store import open_store
from shiftnet.store.kube import KubeStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MASTER_CONDITION = {
    "type": "NetworkUnavailable",
    "status": "False",
    "reason": "RouteCreated",
}


async def test_a_node_registers_with_its_status_in_one_write_and_keeps_the_masters(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = start_apiserver(request, tmp_path / "apiserver")
    node_store = open_store(f"kube://{api.kubeconfig}")
    master_store = open_store(f"kube://{api.kubeconfig}")
    assert isinstance(node_store, KubeStore)
    master = Client(master_store)
    await master.create(
        HostSubnet(
            metadata={"name": "far"},  # type: ignore[arg-type]
            host="far",
            host_ip="127.0.0.1",
            subnet="127.10.9.0/24",
        )
    )
    real = node_store._write_status
    status_writes: list[str] = []

    async def counted(res: Any, calls: Any, written: Any, wanted: Any) -> Any:
        """The agent's own store, unchanged: its ``/status`` writes are noted."""
        status_writes.append(res.plural)
        return await real(res, calls, written, wanted)

    monkeypatch.setattr(node_store, "_write_status", counted)
    agent = NodeAgent(
        node_store,
        NodeConfig(node_name="far", state_dir=tmp_path / "node", heartbeat_seconds=1.0),
    )
    try:
        await agent.start()
        assert "nodes" not in status_writes, "registered in one write"
        node = await master.get(Node, None, "far")
        assert [c.type for c in node.status.conditions] == ["Ready"]
        assert ("InternalIP", "127.0.0.1") in [(a.type, a.address) for a in node.status.addresses]

        node.status.conditions.append(node.status.conditions[0].model_validate(MASTER_CONDITION))
        await master.update(node)
        beats = status_writes.count("nodes")
        for _ in range(100):  # a heartbeat refreshes Ready and keeps the master's condition
            if status_writes.count("nodes") > beats:
                break
            await asyncio.sleep(0.05)
        node = await master.get(Node, None, "far")
        conditions = {c.type: c.status for c in node.status.conditions}
        assert conditions == {"NetworkUnavailable": "False", "Ready": "True"}
        assert await agent.wait_for_subnet(10) == "127.10.9.0/24"
    finally:
        await agent.stop()
        await node_store.close()
        await master_store.close()
