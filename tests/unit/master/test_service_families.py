"""Which families a Service gets (Kubernetes' rules), and the apply-time check on a
single-stack and a dual-stack cluster."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.master import service

from shiftnet.errors import AllocationError, ConfigError
from shiftnet.master.clusterip import ClusterIPAllocator
from shiftnet.master.config import MasterConfig
from shiftnet.master.service_families import ServiceNetworks, plan_families

V4 = ServiceNetworks("172.30.0.0/16")
DUAL = ServiceNetworks("172.30.0.0/16", "fd00:30::/112")
V6_FIRST = ServiceNetworks("fd00:30::/112", "172.30.0.0/16")


def _plan(nets: ServiceNetworks, held: tuple[str, ...] = (), **spec: Any):  # type: ignore[no-untyped-def]
    p = plan_families(service("web", selector={"app": "web"}, **spec), nets, held)
    return p.policy, list(p.families), list(p.requested)


PLANS = [
    # (networks, spec, policy, families)
    (V4, {}, "SingleStack", ["IPv4"]),
    (DUAL, {}, "SingleStack", ["IPv4"]),
    (V6_FIRST, {}, "SingleStack", ["IPv6"]),
    (V4, {"ipFamilyPolicy": "PreferDualStack"}, "PreferDualStack", ["IPv4"]),
    (DUAL, {"ipFamilyPolicy": "PreferDualStack"}, "PreferDualStack", ["IPv4", "IPv6"]),
    (DUAL, {"ipFamilyPolicy": "RequireDualStack"}, "RequireDualStack", ["IPv4", "IPv6"]),
    (
        DUAL,
        {"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv6"]},
        "PreferDualStack",
        ["IPv6", "IPv4"],
    ),
    (DUAL, {"ipFamilies": ["IPv6", "IPv4"]}, "RequireDualStack", ["IPv6", "IPv4"]),
    (DUAL, {"ipFamilies": ["IPv6"]}, "SingleStack", ["IPv6"]),
    (
        DUAL,
        {"clusterIP": "fd00:30::5", "clusterIPs": ["fd00:30::5", "172.30.0.5"]},
        "RequireDualStack",
        ["IPv6", "IPv4"],
    ),
    (DUAL, {"clusterIP": "fd00:30::5"}, "SingleStack", ["IPv6"]),
]


@pytest.mark.parametrize(("nets", "spec", "policy", "families"), PLANS)
def test_families_as_kubernetes_gives_them(
    nets: ServiceNetworks, spec: dict[str, Any], policy: str, families: list[str]
) -> None:
    got_policy, got_families, _ = _plan(nets, **spec)
    assert (got_policy, got_families) == (policy, families)


def test_headless_without_selector_gets_both_families_even_on_a_single_stack_cluster() -> None:
    svc = service("db", cluster_ip="None")
    plan = plan_families(svc, V4)
    assert (plan.policy, plan.families, plan.headless) == (
        "RequireDualStack",
        ("IPv4", "IPv6"),
        True,
    )


def test_single_stack_gives_the_second_ip_back_when_the_pair_is_unchanged() -> None:
    held = ("172.30.0.5", "fd00:30::5")
    policy, families, requested = _plan(
        DUAL,
        held,
        clusterIP="172.30.0.5",
        clusterIPs=list(held),
        ipFamilies=["IPv4", "IPv6"],
        ipFamilyPolicy="SingleStack",
    )
    assert (policy, families, requested) == ("SingleStack", ["IPv4"], ["172.30.0.5"])


REFUSED = [
    (
        V4,
        {"ipFamilyPolicy": "RequireDualStack"},
        'Service "default/web" is invalid: spec.ipFamilyPolicy: Invalid value: '
        '"RequireDualStack": this cluster is not configured for dual-stack services',
    ),
    (
        V4,
        {"ipFamilies": ["IPv6"]},
        'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster',
    ),
    (
        V4,
        {"clusterIP": "fd00:30::5"},
        'spec.clusterIPs[0]: Invalid value: "fd00:30::5": IPv6 is not configured on this cluster',
    ),
    (
        DUAL,
        {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4", "IPv6"]},
        "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or "
        "'PreferDualStack' when multiple IP families are specified",
    ),
    (
        DUAL,
        {
            "ipFamilyPolicy": "SingleStack",
            "clusterIP": "172.30.0.5",
            "clusterIPs": ["172.30.0.5", "fd00:30::5"],
        },
        "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
    ),
]


@pytest.mark.parametrize(("nets", "spec", "words"), REFUSED)
def test_refused_in_kubernetes_words(
    nets: ServiceNetworks, spec: dict[str, Any], words: str
) -> None:
    with pytest.raises(AllocationError) as err:
        _plan(nets, **spec)
    assert words in str(err.value)


def test_check_request_on_a_dual_stack_cluster() -> None:
    others = [
        service(
            "a",
            cluster_ip="172.30.0.1",
            clusterIPs=["172.30.0.1", "fd00:30::1"],
            ipFamilyPolicy="PreferDualStack",
        )
    ]
    ok = service("b", ipFamilyPolicy="RequireDualStack")
    ClusterIPAllocator.check_request(ok, others, DUAL)
    taken = service(
        "c",
        cluster_ip="172.30.0.2",
        clusterIPs=["172.30.0.2", "fd00:30::1"],
        ipFamilyPolicy="RequireDualStack",
    )
    with pytest.raises(AllocationError) as err:
        ClusterIPAllocator.check_request(taken, others, DUAL)
    assert str(err.value) == (
        'Service "default/c" is invalid: spec.clusterIPs[1]: Invalid value: "fd00:30::1": '
        'provided IP is already allocated (to Service "default/a")'
    )
    with pytest.raises(AllocationError, match="this cluster is not configured for dual-stack"):
        ClusterIPAllocator.check_request(ok, others, "172.30.0.0/16")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (
            {"secondary_service_network": "fd00:30::/112"},
            "local network mode serves ClusterIPs on loopback, where IPv6 has the single "
            "address ::1",
        ),
        (
            {"network_mode": "sdn", "secondary_service_network": "172.31.0.0/16"},
            "is of the same family as the service network 172.30.0.0/16: it must be IPv6",
        ),
        (
            {"network_mode": "sdn", "secondary_service_network": "fd00:30::1/112"},
            "secondary service network setting is invalid",
        ),
    ],
)
def test_secondary_network_settings(kwargs: dict[str, Any], words: str) -> None:
    mode = kwargs.pop("network_mode", None)
    with pytest.raises(ConfigError) as err:
        MasterConfig.build(mode, **kwargs)
    assert words in str(err.value)


def test_sdn_mode_takes_an_ipv6_secondary_network() -> None:
    cfg = MasterConfig.build("sdn", secondary_service_network="fd00:30::/112")
    assert cfg.secondary_service_network == "fd00:30::/112"
