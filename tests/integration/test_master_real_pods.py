"""Master + a real node agent: Endpoints follow real pod processes as they start, stop and die."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.master import eventually, service
from tests.support.node import NodeHarness, server_pod

from shiftnet.api import Endpoints, Pod, Service
from shiftnet.informer import Informers
from shiftnet.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

Seen = tuple[tuple[str, ...], tuple[str, ...]]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path, with_master=True)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


async def test_endpoints_follow_real_pods(cluster: NodeHarness) -> None:
    client = cluster.client
    history: list[Seen] = []
    watch_store = open_store(f"sqlite://{cluster.state_dir}/state.db")
    watchers = Informers(watch_store)

    def record(etype: str, old: Endpoints | None, new: Endpoints | None) -> None:
        if new is not None and new.name == "web":
            history.append(
                (
                    tuple(a.ip for s in new.subsets for a in s.addresses),
                    tuple(a.ip for s in new.subsets for a in s.not_ready_addresses),
                )
            )

    watchers.informer(Endpoints).add_handler(record)
    await watchers.start()
    try:
        await client.create(
            service("web", selector={"app": "web"}, ports=[{"port": 80, "targetPort": "web"}])
        )
        for i in range(3):  # no nodeName: the master's scheduler places them
            await client.create(server_pod(f"web-{i}", node=None))
        pods = [await cluster.wait_ready(f"web-{i}", timeout=30) for i in range(3)]
        ips = sorted(p.status.pod_ip or "" for p in pods)
        assert all(p.spec.node_name == "node-a" for p in pods)

        async def current() -> Seen:
            return history[-1] if history else ((), ())

        def ready(want: list[str]):  # type: ignore[no-untyped-def]
            return lambda seen: sorted(seen[0]) == sorted(want) and not seen[1]

        await eventually(current, ready(ips), timeout=10)
        svc = await client.get(Service, "default", "web")
        assert svc.spec.cluster_ip and svc.spec.cluster_ip.startswith("127.30.")
        ep = await client.get(Endpoints, "default", "web")
        assert [p.port for s in ep.subsets for p in s.ports] == [8080]

        # kill one pod's process: it leaves `addresses`, is restarted, and comes back
        victim = pods[1]
        [pid] = cluster.pids(victim.name)
        mark = len(history)
        os.kill(pid, signal.SIGKILL)
        await cluster.wait_pod(
            victim.name,
            lambda p: p.ready and p.status.container_statuses[0].restart_count == 1,
            timeout=30,
        )
        await eventually(current, ready(ips), timeout=10)
        assert any(victim.status.pod_ip not in seen[0] for seen in history[mark:]), history[mark:]

        # change a pod's labels: it leaves the Endpoints
        def relabel(p: Pod) -> Pod:
            p.metadata.labels["app"] = "elsewhere"
            return p

        await client.mutate(Pod, "default", pods[0].name, relabel)
        rest = [ip for ip in ips if ip != pods[0].status.pod_ip]
        await eventually(current, ready(rest), timeout=10)
    finally:
        await watchers.stop()
        await watch_store.close()
