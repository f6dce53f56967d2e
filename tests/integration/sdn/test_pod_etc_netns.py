"""What ``ip netns exec <pod namespace>`` shows is the pod's own resolv.conf and hosts (root).

The node agent's path: a PodRunner makes the pod's files (sdn/podresolver.py),
SdnNetwork.setup_pod wires the pod into a node namespace the test creates and
puts the same texts in /etc/netns/<pod namespace>/, teardown_pod removes them.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shiftnet.api import ClusterNetwork, HostSubnet, Pod
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.netlink import in_netns
from shiftnet.sdn.pods import PodRunner
from shiftnet.sdn.sdnmode import ETC_NETNS, SdnNetwork
from shiftnet.sdn.topology import pod_netns
from shiftnet.sdn.underlay import LabMachine, Underlay

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


@pytest.fixture
def node() -> Iterator[tuple[Underlay, LabMachine]]:
    under = Underlay(f"sn-e{uuid.uuid4().hex[:6]}")
    try:
        yield under, under.up(1)[0]
    finally:
        under.down()
    assert under.namespaces() == []


def cat(netns: str, path: str) -> str:
    proc = subprocess.run(
        in_netns(netns, ["cat", path]), capture_output=True, text=True, timeout=30, check=True
    )
    return proc.stdout


def pod() -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-" + uuid.uuid4().hex},
            "spec": {
                "containers": [{"name": "c", "command": ["true"]}],
                "hostname": "web-0",
                "subdomain": "lookup",
                "hostAliases": [{"ip": "10.1.0.77", "hostnames": ["foo.local"]}],
                "dnsConfig": {"searches": ["corp.example"], "options": [{"name": "edns0"}]},
            },
        }
    )


def test_ip_netns_exec_shows_the_pods_own_files_until_the_pod_goes(
    node: tuple[Underlay, LabMachine], tmp_path: Path
) -> None:
    _, machine = node
    config = NodeConfig(
        node_name=machine.name,
        state_dir=tmp_path,
        network="sdn",
        host_ip=machine.host_ip,
        dns_server=(machine.host_ip, 53),
    )
    runner = PodRunner(pod(), "10.1.0.5", config, lambda: None)
    net = SdnNetwork(node=machine.name, host_ip=machine.host_ip, netns=machine.netns)
    subnet = HostSubnet.model_validate(
        {
            "metadata": {"name": machine.name},
            "host": machine.name,
            "hostIP": machine.host_ip,
            "subnet": "10.1.0.0/24",
        }
    )
    cluster = ClusterNetwork.model_validate(
        {
            "metadata": {"name": "default"},
            "network": "10.1.0.0/16",
            "clusterNetworks": [{"CIDR": "10.1.0.0/16", "hostSubnetLength": 8}],
            "serviceNetwork": "172.30.0.0/16",
        }
    )
    pod_ns = pod_netns(machine.name, "shop", "web-0")
    folder = ETC_NETNS / pod_ns
    try:
        assert asyncio.run(net.sync_node([subnet], cluster)) is not None
        asyncio.run(net.setup_pod("shop", "web-0", "10.1.0.5", runner.etc_files))

        resolv, hosts = cat(pod_ns, "/etc/resolv.conf"), cat(pod_ns, "/etc/hosts")
        # exactly what the pod's processes get bind-mounted (sdn/podetc.py)
        assert resolv == (runner.pod_dir / "resolv.conf").read_text()
        assert hosts == (runner.pod_dir / "hosts").read_text()
        assert resolv.startswith("search shop.svc.cluster.local svc.cluster.local cluster.local")
        assert f"nameserver {machine.host_ip}\n" in resolv
        assert "corp.example" in resolv and "edns0" in resolv
        assert "10.1.0.5\tweb-0.lookup.shop.svc.cluster.local\tweb-0\n" in hosts
        assert "10.1.0.77\tfoo.local\n" in hosts
        assert sorted(p.name for p in folder.iterdir()) == ["hosts", "resolv.conf"]
        assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {"0o644"}

        asyncio.run(net.teardown_pod("shop", "web-0", "10.1.0.5"))
        assert not folder.exists()
    finally:
        subprocess.run(["rm", "-rf", "--", str(folder)], check=False)
        asyncio.run(runner.stop())
