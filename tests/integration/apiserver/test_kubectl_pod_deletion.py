"""``kubectl delete pod`` against ``shiftnet apiserver``: graceful, as a Kubernetes API server."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.apiserver import APIServerProcess

from shiftnet.api import Node, Pod
from shiftnet.client import Client
from shiftnet.store import open_store

pytestmark = pytest.mark.integration


async def _seed(url: str) -> None:
    """A Ready node (as its agent registers it) and a pod scheduled to it."""
    store = open_store(url)
    try:
        client = Client(store)
        await client.create(
            Node.model_validate(
                {
                    "metadata": {"name": "node-a"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                }
            )
        )
        for name in ("web", "db"):
            await client.create(
                Pod.model_validate(
                    {
                        "metadata": {"name": name, "namespace": "default"},
                        "spec": {
                            "nodeName": "node-a",
                            "terminationGracePeriodSeconds": 45,
                            "containers": [{"name": "c", "command": ["true"]}],
                        },
                    }
                )
            )
    finally:
        await store.close()


def test_kubectl_delete_marks_the_pod_terminating_and_force_removes_it(
    api: APIServerProcess,
) -> None:
    asyncio.run(_seed(api.store))
    out = api.ok("delete", "pod", "web", "--wait=false").strip()
    assert out == 'pod "web" deleted'
    pod = api.json("get", "pod", "web")
    assert pod["metadata"]["deletionTimestamp"]
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 45
    assert "Terminating" in api.ok("get", "pod", "web")
    api.ok("delete", "pod", "db", "--wait=false", "--grace-period=7")
    assert api.json("get", "pod", "db")["metadata"]["deletionGracePeriodSeconds"] == 7
    api.ok("delete", "pod", "web", "--grace-period=0", "--force")
    assert api.kubectl("get", "pod", "web").returncode != 0
