"""A pod deletion under a running client: 0 failed connections through the user-space proxy.

Real master, node agent, pods and proxy on one SQLite store. The only pod of
a Service is deleted before its replacement is ready: it stays in the
Service's EndpointSlice as ``serving`` and ``terminating`` for its grace
period (it drains for a few seconds after SIGTERM, as servers do), and the
proxy, finding no ready endpoint, keeps sending to it as kube-proxy does,
until the replacement is ready. Then a rolling step the other way round.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.node import NodeHarness, wait_for
from tests.support.ports import free_port

from shiftnet.api import EndpointSlice, Pod, Service, parse_object
from shiftnet.proxy.service import ProxyConfig, ServiceProxy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[3]
DRAIN_SECONDS = 3.0
POD_PORT = 8080

# A TCP server: a greeting line per connection; on SIGTERM it goes on serving
# for DRAIN seconds, then exits (a server finishing what it was sent).
SERVER = """
import os, signal, socket, sys, threading, time
name = os.environ["POD_NAME"].encode()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ["POD_IP"], {port}))
s.listen(512)
def drain(*_):
    threading.Timer({drain}, lambda: os._exit(0)).start()
signal.signal(signal.SIGTERM, drain)
while True:
    c, _ = s.accept()
    c.sendall(name + b"\\n")
    c.close()
"""


def server_pod(name: str) -> Pod:
    script = SERVER.format(port=POD_PORT, drain=DRAIN_SECONDS)
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "nodeName": "node-a",
                "terminationGracePeriodSeconds": 20,
                "containers": [
                    {
                        "name": "srv",
                        "command": [sys.executable, "-c", script],
                        "ports": [{"name": "tcp", "containerPort": POD_PORT}],
                        "readinessProbe": {
                            "tcpSocket": {"port": "tcp"},
                            "periodSeconds": 1,
                        },
                    }
                ],
            },
        }
    )  # type: ignore[return-value]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[NodeHarness, ServiceProxy]]:
    h = NodeHarness(tmp_path, with_master=True)
    proxy = ServiceProxy(h.store, ProxyConfig(mode="userspace", min_sync_interval=0.02))
    try:
        await h.start()
        await proxy.start()
        yield h, proxy
    finally:
        await proxy.stop()
        await h.close()


def start_client(host: str, port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.steady_client", "tcp", host, str(port), "120"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate(input="", timeout=60)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


async def slice_states(h: NodeHarness) -> dict[str, tuple[bool, bool, bool]]:
    found = await h.client.list(EndpointSlice, "default", "kubernetes.io/service-name=web")
    return {
        (e.target_ref.name or "") if e.target_ref else "": (
            e.conditions.is_ready,
            e.conditions.is_serving,
            e.conditions.is_terminating,
        )
        for s in found
        for e in s.endpoints
    }


async def test_deleting_the_only_pod_before_its_replacement_drops_no_connection(
    cluster: tuple[NodeHarness, ServiceProxy],
) -> None:
    h, proxy = cluster
    port = free_port()
    svc = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "selector": {"app": "web"},
                "ports": [{"name": "tcp", "port": port, "targetPort": "tcp"}],
            },
        }
    )
    assert isinstance(svc, Service)
    await h.client.create(svc)
    await h.client.create(server_pod("v1"))
    await h.wait_ready("v1")
    stored = await wait_for(lambda: h.client.get(Service, "default", "web"), what="service stored")
    vip = await wait_for(
        lambda: asyncio.sleep(0, stored.spec.cluster_ip or None), what="cluster IP"
    )
    await wait_for(
        lambda: asyncio.sleep(0, any(e.backends for e in proxy.table.entries.values())),
        what="proxy has the backend",
    )
    client = await asyncio.to_thread(start_client, vip, port)
    try:
        # 1. the only pod goes first: it drains, the proxy falls back to it
        await h.client.delete(Pod, "default", "v1")
        await wait_for(
            lambda: _state(h, "v1", (False, True, True)), what="v1 serving and terminating"
        )
        await asyncio.sleep(0.5)  # traffic flows to the terminating pod alone
        await h.client.create(server_pod("v2"))
        await h.wait_ready("v2")
        await wait_for(lambda: _gone(h, "v1"), timeout=30, what="v1 removed after its drain")
        # 2. a rolling step: the replacement is ready before the old pod goes
        await h.client.create(server_pod("v3"))
        await h.wait_ready("v3")
        await wait_for(lambda: _state(h, "v3", (True, True, False)), what="v3 ready in slice")
        await h.client.delete(Pod, "default", "v2")
        await wait_for(lambda: _gone(h, "v2"), timeout=30, what="v2 removed after its drain")
        await asyncio.sleep(0.5)
    finally:
        result = await asyncio.to_thread(finish, client)
    assert result["failed"] == 0, result
    assert result["ok"] > 50, result


async def _state(h: NodeHarness, pod: str, want: tuple[bool, bool, bool]) -> bool:
    return (await slice_states(h)).get(pod) == want


async def _gone(h: NodeHarness, pod: str) -> bool:
    return await h.pod(pod) is None and pod not in await slice_states(h)
