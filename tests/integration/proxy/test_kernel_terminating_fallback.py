"""The terminating fallback in the kernel modes, in network namespaces this test creates.

A client in its namespace connects without pause to a Service whose
EndpointSlice goes through what a pod deletion does to it: the only endpoint
turns ``serving`` + ``terminating`` (not ready), a new ready endpoint joins a
second later, then the old one leaves. Falling back to the terminating
endpoint while nothing is ready, as kube-proxy does, no connection fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.proxy_cluster import backends_of, put, service, wait_until
from tests.support.proxy_netns import ROOT, Topology

from shiftnet.api import EndpointSlice
from shiftnet.client import Client
from shiftnet.errors import NotFound
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

PORT = 8080
VIP = "172.30.0.80"


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    t = Topology(backends=2).create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


def web_slice(endpoints: list[tuple[str, dict[str, bool]]]) -> EndpointSlice:
    return EndpointSlice.model_validate(
        {
            "metadata": {
                "name": "web-x7k2p",
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": "web"},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": c} for ip, c in endpoints],
            "ports": [{"name": "main", "port": PORT, "protocol": "TCP"}],
        }
    )


READY = {"ready": True, "serving": True, "terminating": False}
GOING = {"ready": False, "serving": True, "terminating": True}


async def write(client: Client, es: EndpointSlice) -> None:
    try:
        current = await client.get(EndpointSlice, "default", es.name)
    except NotFound:
        await client.create(es)
        return
    es.metadata.resource_version = current.metadata.resource_version
    await client.update(es)


def steady(topo: Topology) -> subprocess.Popen[str]:
    argv = ["tcp", VIP, str(PORT), "60"]  # at most 60 s
    proc = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            topo.client,
            sys.executable,
            "-m",
            "tests.support.steady_client",
            *argv,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
    )
    topo.procs.append(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate(input="", timeout=90)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("mode", ["nftables", "iptables"])
async def test_a_pod_deletion_drops_no_connection(topo, tmp_path: Path, mode: str) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    b1, b2 = topo.backend_ip(1), topo.backend_ip(2)
    await put(client, service("web", VIP, PORT))
    await write(client, web_slice([(b1, READY)]))
    cfg = ProxyConfig(
        mode=mode, min_sync_interval=0.0, kernel=KernelConfig(mode=mode, netns=topo.node)
    )
    proxy = ServiceProxy(store, cfg)
    proc: subprocess.Popen[str] | None = None
    try:
        await proxy.start()
        await wait_until(lambda: backends_of(proxy, "default", "web") == {(b1, PORT)})
        proc = await asyncio.to_thread(steady, topo)
        await write(client, web_slice([(b1, GOING)]))  # deleted: draining, nothing ready
        await asyncio.sleep(1.0)
        await write(client, web_slice([(b1, GOING), (b2, READY)]))  # the replacement
        await wait_until(lambda: backends_of(proxy, "default", "web") == {(b2, PORT)})
        await asyncio.sleep(0.5)
        await write(client, web_slice([(b2, READY)]))  # the old pod's object is gone
        await asyncio.sleep(0.5)
    finally:
        result = await asyncio.to_thread(finish, proc) if proc is not None else None
        await proxy.stop(cleanup=True)
        await store.close()
    assert result is not None and result["failed"] == 0, result
    assert result["ok"] > 20, result
