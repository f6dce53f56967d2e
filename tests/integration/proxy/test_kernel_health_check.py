"""Kernel modes serve kube-proxy's health check node ports too, inside the node's network
namespace (``--netns``): 503 without a local ready endpoint, 200 with one, 503 again when
the local ones only terminate, closed when the Service is deleted; never on the host's own
loopback."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.proxy_netns import sh

from shiftnet.api import Endpoints, EndpointSlice, Service
from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.sdn.threadns import entered
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

HC_PORT = 31999  # inside a namespace this test owns: any port is free there
VIP = "172.30.7.7"


def ask(ns: str, port: int) -> tuple[int, dict[str, Any]] | None:
    """GET /healthz from inside ``ns``; None when nothing listens there."""

    def connect() -> socket.socket:
        with entered(ns):  # the socket belongs to the namespace it was made in
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)

    sock = connect()
    try:
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return None
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    finally:
        sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


async def until(ns: str, want: int | None, timeout: float = 10.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await asyncio.to_thread(ask, ns, HC_PORT)
        if (got is None and want is None) or (got is not None and got[0] == want):
            return got
        assert loop.time() < deadline, got
        await asyncio.sleep(0.05)


@pytest.fixture
async def netns() -> AsyncIterator[str]:
    name = f"sn-hc{uuid.uuid4().hex[:6]}"
    sh("ip", "netns", "add", name)
    try:
        sh("ip", "-n", name, "link", "set", "lo", "up")
        yield name
    finally:
        sh("ip", "netns", "del", name, check=False)


def endpoints(addresses: list[tuple[str, str]]) -> Endpoints:
    return Endpoints.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default"},
            "subsets": [
                {
                    "addresses": [{"ip": ip, "nodeName": node} for ip, node in addresses],
                    "ports": [{"name": "main", "port": 8080}],
                }
            ],
        }
    )


def terminating_slice(ip: str, node: str) -> EndpointSlice:
    """An EndpointSlice (it wins over the Endpoints) whose one endpoint is going away."""
    return EndpointSlice.model_validate(
        {
            "metadata": {
                "name": "web-abc",
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": "web"},
            },
            "addressType": "IPv4",
            "ports": [{"name": "main", "port": 8080, "protocol": "TCP"}],
            "endpoints": [
                {
                    "addresses": [ip],
                    "nodeName": node,
                    "conditions": {"ready": False, "serving": True, "terminating": True},
                }
            ],
        }
    )


@pytest.mark.parametrize("mode", ["nftables", "iptables"])
async def test_kernel_mode_health_check_in_the_node_namespace(
    netns: str, mode: str, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    kernel = KernelConfig(mode=mode, netns=netns, iptables_min_sync_period=0.0)
    proxy = ServiceProxy(
        store, ProxyConfig(mode=mode, node_name="n1", min_sync_interval=0.0, kernel=kernel)
    )
    try:
        await proxy.start()
        svc = {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "type": "LoadBalancer",
                "externalTrafficPolicy": "Local",
                "healthCheckNodePort": HC_PORT,
                "clusterIP": VIP,
                "ports": [{"name": "main", "port": 80, "nodePort": 30080}],
            },
        }
        await client.create(Service.model_validate(svc))
        await client.create(endpoints([("10.9.0.2", "n2")]))
        _, body = await until(netns, 503)
        assert body == {
            "service": {"namespace": "default", "name": "web"},
            "localEndpoints": 0,
            "serviceProxyHealthy": True,
        }
        with socket.socket() as probe:  # the host's loopback has no listener of the proxy's
            assert probe.connect_ex(("127.0.0.1", HC_PORT)) != 0
        eps = await client.get(Endpoints, "default", "web")
        fresh = endpoints([("10.9.0.2", "n2"), ("10.9.0.3", "n1"), ("10.9.0.4", "n1")])
        fresh.metadata.resource_version = eps.metadata.resource_version
        await client.update(fresh)
        _, body = await until(netns, 200)
        assert body["localEndpoints"] == 2
        # its only local pod terminating (still serving): 503, the balancer drains the node
        await client.create(terminating_slice("10.9.0.3", "n1"))
        _, body = await until(netns, 503)
        assert body["localEndpoints"] == 0
        await client.delete(Service, "default", "web")
        await until(netns, None)
    finally:
        await proxy.stop(cleanup=True)
        await store.close()
