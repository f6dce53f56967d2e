"""Dual-stack ClusterIPs from a real master on a real store: a second service network,
one ClusterIP of each family for PreferDualStack/RequireDualStack, the second given back
with SingleStack, RequireDualStack refused on a single-stack cluster."""

from __future__ import annotations

import ipaddress

import pytest
from tests.support.master import eventually, running_master, service

from shiftnet.api import ClusterNetwork, Service
from shiftnet.errors import AllocationError
from shiftnet.master import MasterConfig, check_service_request
from shiftnet.master.clusterip import ERROR_ANNOTATION
from shiftnet.master.service_families import SECONDARY_ANNOTATION

pytestmark = pytest.mark.integration

DUAL = MasterConfig.build(
    "sdn", service_network="172.30.0.0/16", secondary_service_network="fd00:30::/112"
)


def _families(ips: list[str]) -> list[int]:
    return [ipaddress.ip_address(ip).version for ip in ips]


async def test_dual_stack_cluster_gives_one_ip_per_family(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/state.db"
    async with running_master(url, DUAL) as (_, client):
        cn = await client.get(ClusterNetwork, None, "default")
        assert cn.metadata.annotations[SECONDARY_ANNOTATION] == "fd00:30::/112"
        await client.create(service("single"))
        await client.create(service("prefer", ipFamilyPolicy="PreferDualStack"))
        await client.create(service("six-first", ipFamilies=["IPv6", "IPv4"]))
        await client.create(service("headless", cluster_ip="None", selector={"a": "b"}))

        def done(svcs: list[Service]) -> bool:
            return len(svcs) == 4 and all(s.spec.ip_family_policy for s in svcs)

        got = {s.name: s.spec for s in await eventually(lambda: client.list(Service), done)}
        assert (got["single"].ip_family_policy, got["single"].ip_families) == (
            "SingleStack",
            ["IPv4"],
        )
        assert got["single"].cluster_ips == [got["single"].cluster_ip]
        prefer = got["prefer"]
        assert prefer.ip_families == ["IPv4", "IPv6"] and _families(prefer.cluster_ips) == [4, 6]
        assert prefer.cluster_ip == prefer.cluster_ips[0]
        assert ipaddress.ip_address(prefer.cluster_ips[1]) in ipaddress.ip_network("fd00:30::/112")
        six = got["six-first"]
        assert six.ip_family_policy == "RequireDualStack" and _families(six.cluster_ips) == [6, 4]
        assert got["headless"].cluster_ips == ["None"]
        assert got["headless"].ip_families == ["IPv4"]  # with a selector: SingleStack
        assert len({ip for s in got.values() for ip in s.cluster_ips or [] if ip != "None"}) == 5

        # SingleStack on the unchanged pair gives the IPv6 address back ...
        second = prefer.cluster_ips[1]
        stored = await client.get(Service, "default", "prefer")
        stored.spec.ip_family_policy = "SingleStack"
        await client.update(stored)
        cut = await eventually(
            lambda: client.get(Service, "default", "prefer"),
            lambda s: s.spec.cluster_ips == [prefer.cluster_ip],
        )
        assert cut.spec.ip_families == ["IPv4"]
        # ... and the next dual-stack Service can take it
        await client.create(
            service(
                "taker",
                cluster_ip="172.30.9.9",
                clusterIPs=["172.30.9.9", second],
                ipFamilyPolicy="RequireDualStack",
            )
        )
        taker = await eventually(
            lambda: client.get(Service, "default", "taker"),
            lambda s: bool(s.spec.ip_families),
        )
        assert taker.spec.cluster_ips == ["172.30.9.9", second]
        assert ERROR_ANNOTATION not in taker.metadata.annotations

    # a restarted master (without the flag) keeps the recorded second network and every pair
    plain = MasterConfig.build("sdn", service_network="172.30.0.0/16")
    async with running_master(url, plain) as (master, client):
        assert master.cluster_ips.secondary is not None
        await client.create(service("later", ipFamilyPolicy="RequireDualStack"))
        later = await eventually(
            lambda: client.get(Service, "default", "later"), lambda s: bool(s.spec.cluster_ips)
        )
        taken = {ip for s in got.values() for ip in s.cluster_ips or []}
        assert _families(later.spec.cluster_ips or []) == [4, 6]
        assert not set(later.spec.cluster_ips or []) & (taken | {"172.30.9.9"})


async def test_single_stack_cluster_refuses_require_dual_stack(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path}/state.db"
    async with running_master(url) as (_, client):
        want = service("both", ipFamilyPolicy="RequireDualStack")
        with pytest.raises(AllocationError) as err:
            await check_service_request(client, want)
        assert str(err.value) == (
            'Service "default/both" is invalid: spec.ipFamilyPolicy: Invalid value: '
            '"RequireDualStack": this cluster is not configured for dual-stack services'
        )
        # written around the check: reported on the Service, no address served
        await client.create(want)
        await client.create(service("prefer", ipFamilyPolicy="PreferDualStack"))
        refused = await eventually(
            lambda: client.get(Service, "default", "both"),
            lambda s: ERROR_ANNOTATION in s.metadata.annotations,
        )
        assert refused.spec.cluster_ip is None and refused.spec.cluster_ips is None
        assert "not configured for dual-stack" in refused.metadata.annotations[ERROR_ANNOTATION]
        prefer = await eventually(
            lambda: client.get(Service, "default", "prefer"), lambda s: bool(s.spec.cluster_ips)
        )
        assert prefer.spec.ip_families == ["IPv4"] and _families(prefer.spec.cluster_ips or []) == [
            4
        ]
