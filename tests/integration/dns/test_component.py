"""The DNS as a LocalCluster component: starts after the store, answers, stops."""

from __future__ import annotations

from pathlib import Path

import dns.asyncquery
import dns.message
import pytest

from shiftnet.cluster import ClusterConfig, LocalCluster, StoreComponent
from shiftnet.dns.component import DNSComponent

pytestmark = pytest.mark.integration


async def test_dns_component_in_a_local_cluster(tmp_path: Path) -> None:
    config = ClusterConfig(
        state_dir=tmp_path,
        store_url=f"sqlite:///{tmp_path}/state.db",
        node_name="n1",
        extra={"dns": {"listen": "127.0.0.1:0", "domain": "corp.example", "ttl": 9}},
    )
    lines: list[str] = []
    async with LocalCluster(config, [StoreComponent, DNSComponent], lines.append) as cluster:
        comp = cluster.component("dns")
        assert isinstance(comp, DNSComponent)
        port = comp.server.address[1]
        q = dns.message.make_query("corp.example", "SOA")  # the zone's records carry its TTL
        m = await dns.asyncquery.udp(q, "127.0.0.1", port=port, timeout=3)
        assert m.answer[0].ttl == 9
    assert any(
        line.strip().startswith("dns") and "corp.example on 127.0.0.1:" in line for line in lines
    )
