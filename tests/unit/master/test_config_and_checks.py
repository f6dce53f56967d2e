"""MasterConfig defaults and checks; the ClusterIP up-front check; subnet helpers."""

from __future__ import annotations

import pytest
from tests.support.master import node, service

from shiftnet.errors import AllocationError, ConfigError
from shiftnet.ipam import SubnetRange
from shiftnet.master.clusterip import ClusterIPAllocator
from shiftnet.master.config import MasterConfig
from shiftnet.master.subnets import (
    cluster_network_object,
    effective_network,
    exhausted_message,
    set_network_condition,
)

NET = "127.30.0.0/16"


def test_mode_defaults() -> None:
    local = MasterConfig.build()
    assert (local.cluster_network, local.host_subnet_length, local.service_network) == (
        "127.10.0.0/16",
        8,
        "127.30.0.0/16",
    )
    sdn = MasterConfig.build("sdn")
    assert (sdn.cluster_network, sdn.host_subnet_length, sdn.service_network) == (
        "10.1.0.0/16",
        8,
        "172.30.0.0/16",
    )
    mixed = MasterConfig.build("sdn", cluster_network="10.128.0.0/14", host_subnet_length=9)
    assert (mixed.cluster_network, mixed.host_subnet_length) == ("10.128.0.0/14", 9)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"network_mode": "ovn"}, 'network mode "ovn" is not supported'),
        ({"cluster_network": "127.10.0.1/16"}, "cluster network setting is invalid"),
        (
            {"cluster_network": "127.10.0.0/24", "host_subnet_length": 9},
            "host subnet length 9 does not fit",
        ),
        ({"service_network": "nonsense"}, "service network setting is invalid"),
        ({"service_network": "127.10.128.0/17"}, "overlaps cluster network"),
    ],
)
def test_bad_settings_say_which(kwargs, words) -> None:  # type: ignore[no-untyped-def]
    mode = kwargs.pop("network_mode", None)
    with pytest.raises(ConfigError, match=words):
        MasterConfig.build(mode, **kwargs)


def test_check_request_accepts_free_and_unrequested() -> None:
    others = [service("a", cluster_ip="127.30.0.1"), service("h", cluster_ip="None")]
    ClusterIPAllocator.check_request(service("b", cluster_ip="127.30.0.2"), others, NET)
    ClusterIPAllocator.check_request(service("c"), others, NET)
    ClusterIPAllocator.check_request(service("d", cluster_ip="None"), others, NET)
    # re-applying a Service with the address it already holds is fine
    ClusterIPAllocator.check_request(service("a", cluster_ip="127.30.0.1"), others, NET)


@pytest.mark.parametrize(
    ("ip", "words"),
    [
        (
            "127.30.0.1",
            'Service "default/b" is invalid: spec.clusterIP: Invalid value: '
            '"127.30.0.1": provided IP is already allocated',
        ),
        (
            "10.0.0.1",
            "provided IP is not in the valid range. The range of valid IPs is 127.30.0.0/16",
        ),
        ("127.30.0.0", "not in the valid range"),  # the network address is reserved
        ("127.30.255.255", "not in the valid range"),  # so is broadcast
        ("bogus", "not a valid IP address"),
    ],
)
def test_check_request_refuses(ip: str, words: str) -> None:
    others = [service("a", cluster_ip="127.30.0.1")]
    with pytest.raises(AllocationError) as err:
        ClusterIPAllocator.check_request(service("b", cluster_ip=ip), others, NET)
    assert words in str(err.value)


def test_check_request_refuses_changing_a_held_address() -> None:
    with pytest.raises(AllocationError, match="field is immutable"):
        ClusterIPAllocator.check_request(
            service("a", cluster_ip="127.30.0.9"), [service("a", cluster_ip="127.30.0.1")], NET
        )


def test_cluster_network_object_and_effective_network() -> None:
    cn = cluster_network_object(MasterConfig.build("sdn"))
    wire = cn.to_dict()
    assert wire["network"] == "10.1.0.0/16" and wire["hostsubnetlength"] == 8
    assert wire["clusterNetworks"] == [{"CIDR": "10.1.0.0/16", "hostSubnetLength": 8}]
    assert wire["serviceNetwork"] == "172.30.0.0/16"
    assert effective_network(cn) == ("10.1.0.0/16", 8)
    cn.cluster_networks = []
    assert effective_network(cn) == ("10.1.0.0/16", 8)
    cn.network = None
    assert effective_network(cn) is None


def test_network_condition_is_set_once_and_keeps_transition_time() -> None:
    n = node("n3")
    msg = exhausted_message("n3", SubnetRange("127.10.0.0/23", 8))
    assert msg.startswith('no subnet left for node "n3": cluster network 127.10.0.0/23')
    assert "all 2 /24 subnets in use (range is full)" in msg
    assert set_network_condition(n, True, "SubnetsExhausted", msg)
    first = n.status.conditions[-1]
    assert (first.type, first.status, first.reason) == (
        "NetworkUnavailable",
        "True",
        "SubnetsExhausted",
    )
    assert not set_network_condition(n, True, "SubnetsExhausted", msg)
    assert set_network_condition(n, False, "SubnetAllocated", "ok")
    assert [c.type for c in n.status.conditions] == ["Ready", "NetworkUnavailable"]
    assert n.status.conditions[-1].status == "False"


def test_check_request_range_full_only_for_a_new_service() -> None:
    net = "127.31.0.0/30"  # two usable addresses
    others = [service("a", cluster_ip="127.31.0.1"), service("b", cluster_ip="127.31.0.2")]
    with pytest.raises(AllocationError) as err:
        ClusterIPAllocator.check_request(service("c"), others, net)
    assert str(err.value) == (
        'Service "default/c": failed to allocate a ClusterIP from 127.31.0.0/30: range is full'
    )
    ClusterIPAllocator.check_request(service("a"), others, net)  # re-apply keeps its address
    ClusterIPAllocator.check_request(service("a"), others[1:], net)  # one free
    ClusterIPAllocator.check_request(service("h", cluster_ip="None"), others, net)
