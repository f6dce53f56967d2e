"""A node agent registering through a Kubernetes API while the master writes its new Node.

Through the API a Node's status is a second write after the create (the server
keeps no status on create), so a master that reacts to the new Node in between
makes that write a Conflict. The agent must take the Node as registered and
refresh it, keeping what the master wrote, as ``shiftnet lab up`` relies on.
"""

from __future__ import annotations

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


async def test_a_node_written_between_create_and_status_is_refreshed(
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
    raced: list[str] = []

    async def master_writes_first(res: Any, calls: Any, written: Any, wanted: Any) -> Any:
        """The agent's own store: the master writes the Node just before its status."""
        if res.plural == "nodes" and not raced:
            fresh = await master_store.get("nodes", None, written["metadata"]["name"])
            fresh.setdefault("status", {}).setdefault("conditions", []).append(MASTER_CONDITION)
            await master_store.update("nodes", fresh)
            raced.append(fresh["metadata"]["name"])
        return await real(res, calls, written, wanted)

    monkeypatch.setattr(node_store, "_write_status", master_writes_first)
    agent = NodeAgent(
        node_store,
        NodeConfig(node_name="far", state_dir=tmp_path / "node", heartbeat_seconds=2.0),
    )
    try:
        await agent.start()
        assert raced == ["far"]
        node = await master.get(Node, None, "far")
        conditions = {c.type: c.status for c in node.status.conditions}
        assert conditions == {"NetworkUnavailable": "False", "Ready": "True"}
        assert ("InternalIP", "127.0.0.1") in [(a.type, a.address) for a in node.status.addresses]
        assert await agent.wait_for_subnet(10) == "127.10.9.0/24"
    finally:
        await agent.stop()
        await node_store.close()
        await master_store.close()
