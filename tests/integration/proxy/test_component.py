"""The proxy as a LocalCluster component: the master allocates a ClusterIP from the
local service network and the proxy serves it, as `shiftnet up` will."""

from __future__ import annotations

import socket

import pytest
from tests.support.ports import free_port
from tests.support.proxy_cluster import wait_until
from tests.support.proxy_peers import NamedBackend, who

from shiftnet.api import Endpoints, Service
from shiftnet.client import Client
from shiftnet.cluster import ClusterConfig, LocalCluster, MasterComponent, StoreComponent
from shiftnet.proxy.component import ProxyComponent

pytestmark = pytest.mark.integration


async def test_cluster_with_proxy_reaches_service_by_cluster_ip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = ClusterConfig(
        state_dir=tmp_path, store_url=f"sqlite:///{tmp_path}/state.db", node_name="n1"
    )
    backend = await NamedBackend("pod-a", "127.0.0.1", free_port()).start()
    cluster = LocalCluster(config, components=[StoreComponent, MasterComponent, ProxyComponent])
    await cluster.start()
    try:
        client = Client(cluster.require_store())
        port = free_port()
        await client.create(
            Service.model_validate(
                {
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"ports": [{"name": "http", "port": port}]},
                }
            )
        )
        await client.create(
            Endpoints.model_validate(
                {
                    "metadata": {"name": "web", "namespace": "default"},
                    "subsets": [
                        {
                            "addresses": [{"ip": "127.0.0.1"}],
                            "ports": [{"name": "http", "port": backend.port}],
                        }
                    ],
                }
            )
        )
        proxy = cluster.component("proxy").proxy  # type: ignore[union-attr]
        await wait_until(lambda: proxy.table.entries and proxy.userspace.services, timeout=15)
        (entry,) = proxy.table.entries.values()
        assert entry.cluster_ip.startswith("127.30.")  # allocated by the master
        assert await who(entry.cluster_ip, port) == "pod-a"
        assert "userspace mode, 1 of 1" in cluster.component("proxy").summary()  # type: ignore[union-attr]
    finally:
        await cluster.stop()
        await backend.stop()
    with pytest.raises(OSError):
        socket.create_connection((entry.cluster_ip, port), timeout=1).close()
