"""SDN network mode, the parts that need no root: settings, command wrapping, resolv.conf."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shiftnet.api import ClusterNetwork, ClusterNetworkEntry, ObjectMeta
from shiftnet.errors import ConfigError
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.local import LocalNetwork, network_for
from shiftnet.sdn.sdnmode import SdnNetwork
from shiftnet.sdn.topology import pod_netns


def test_sdn_mode_needs_a_real_host_ip(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="loopback"):
        NodeConfig(node_name="n1", state_dir=tmp_path, network="sdn")
    with pytest.raises(ConfigError, match="not an IPv4 address"):
        NodeConfig(node_name="n1", state_dir=tmp_path, network="sdn", host_ip="10.0.0.300")
    cfg = NodeConfig(node_name="n1", state_dir=tmp_path, network="sdn", host_ip="192.168.250.11")
    net = network_for(cfg)
    assert isinstance(net, SdnNetwork)
    assert net.host_ip == "192.168.250.11"


def test_local_mode_runs_commands_as_they_are(tmp_path: Path) -> None:
    net = network_for(NodeConfig(node_name="n1", state_dir=tmp_path))
    assert isinstance(net, LocalNetwork)
    assert net.command("default", "p", ["python3", "-V"]) == ["python3", "-V"]
    assert asyncio.run(net.ensure_node([], None)) is True


def test_sdn_mode_runs_pod_commands_inside_the_pod_namespace() -> None:
    net = SdnNetwork(node="n1", host_ip="192.168.250.11")
    argv = net.command("default", "web", ["python3", "server.py"])
    assert argv == [
        "ip",
        "netns",
        "exec",
        pod_netns("n1", "default", "web"),
        "python3",
        "server.py",
    ]


def test_sdn_mode_waits_for_the_cluster_network() -> None:
    from shiftnet.api import HostSubnet

    net = SdnNetwork(node="n1", host_ip="192.168.250.11")
    own = HostSubnet(
        metadata=ObjectMeta(name="n1"), host="n1", host_ip="192.168.250.11", subnet="10.1.0.0/24"
    )
    # no ClusterNetwork yet: nothing is planned, nothing applied
    assert asyncio.run(net.sync_node([own], None)) is None
    cn = ClusterNetwork(
        metadata=ObjectMeta(name="default"),
        cluster_networks=[ClusterNetworkEntry(CIDR="10.1.0.0/16", host_subnet_length=8)],
        service_network="172.30.0.0/16",
    )
    with pytest.raises(ConfigError, match="loopback"):
        net.check_subnet("127.10.0.0/24")
    net.driver.apply = lambda plan: None  # type: ignore[method-assign]  # no root here
    plan = asyncio.run(net.sync_node([own], cn))
    assert plan is not None
    assert (plan.gateway, plan.cluster_network, plan.service_network) == (
        "10.1.0.1",
        "10.1.0.0/16",
        "172.30.0.0/16",
    )


def test_pod_files_follow_the_ip_netns_exec_convention(tmp_path: Path) -> None:
    net = SdnNetwork(node="n1", host_ip="192.168.250.11", etc_netns=tmp_path)
    ns = pod_netns("n1", "shop", "web")
    files = {"resolv.conf": "nameserver 10.1.0.1\n", "hosts": "10.1.0.5\tweb\n", "../x": "no"}
    net._write_etc(ns, files)
    assert {p.name: p.read_text() for p in (tmp_path / ns).iterdir()} == {
        "resolv.conf": "nameserver 10.1.0.1\n",
        "hosts": "10.1.0.5\tweb\n",
    }
    assert not (tmp_path / "x").exists()
    net._write_etc(ns, {"resolv.conf": "nameserver 10.1.0.2\n"})  # hosts no longer given
    assert [p.name for p in (tmp_path / ns).iterdir()] == ["resolv.conf"]
    net._write_etc(ns, {})
    assert not (tmp_path / ns).exists()
    net._write_etc(ns, files)
    net._remove_etc(ns)
    assert not (tmp_path / ns).exists()


def _node_args(*argv: str) -> object:
    import argparse

    from shiftnet.cli import node

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    node.register(sub)
    args = parser.parse_args(["node", *argv])
    args.state_dir = "/tmp/unused-shiftnet-state"
    return args


def test_node_cli_sdn_mode_requires_root_and_host_ip(monkeypatch: pytest.MonkeyPatch) -> None:
    from shiftnet.cli.node import config_from_args
    from shiftnet.errors import InvalidInput

    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(ConfigError, match="needs root"):
        config_from_args(_node_args("--network", "sdn", "--host-ip", "10.0.0.1"))  # type: ignore[arg-type]
    monkeypatch.setattr("os.geteuid", lambda: 0)
    with pytest.raises(ConfigError, match="--host-ip"):
        config_from_args(_node_args("--network", "sdn", "--node-name", "n1"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="--dns"):
        config_from_args(  # type: ignore[arg-type]
            _node_args(
                "--network",
                "sdn",
                "--node-name",
                "n1",
                "--host-ip",
                "10.0.0.1",
                "--dns",
                "evil\nnameserver 1.2.3.4",
            )
        )
    cfg = config_from_args(  # type: ignore[arg-type]
        _node_args(
            "--network", "sdn", "--node-name", "n1", "--host-ip", "10.0.0.1", "--dns", "10.0.0.1"
        )
    )
    assert (cfg.network, cfg.host_ip, cfg.dns_server) == ("sdn", "10.0.0.1", ("10.0.0.1", 53))


def test_unchanged_plan_is_reapplied_only_for_repair() -> None:
    from shiftnet.api import HostSubnet
    from shiftnet.sdn.sdnmode import REPAIR_SECONDS

    net = SdnNetwork(
        node="n1",
        host_ip="192.168.250.11",
        cluster_network="10.1.0.0/16",
        service_network="172.30.0.0/16",
    )
    applied: list[object] = []
    net.driver.apply = applied.append  # type: ignore[method-assign]
    own = HostSubnet(
        metadata=ObjectMeta(name="n1"), host="n1", host_ip="192.168.250.11", subnet="10.1.0.0/24"
    )
    other = HostSubnet(
        metadata=ObjectMeta(name="n2"), host="n2", host_ip="192.168.250.12", subnet="10.1.1.0/24"
    )
    asyncio.run(net.sync_node([own]))
    asyncio.run(net.sync_node([own]))
    assert len(applied) == 1  # nothing changed, nothing to repair yet
    asyncio.run(net.sync_node([own, other]))
    assert len(applied) == 2  # a new node: applied at once
    net._applied_at -= REPAIR_SECONDS + 1
    asyncio.run(net.sync_node([own, other]))
    assert len(applied) == 3  # periodic repair of drift
