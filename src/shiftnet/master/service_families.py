"""Which IP families a Service gets, decided as Kubernetes decides it. Pure.

A cluster has one service network (its family is the *default* family) and
may have a second one of the other family (``shiftnet master
--secondary-service-network``, recorded on ClusterNetwork ``default`` as the
``shiftnet.io/secondary-service-network`` annotation). A Service's
``spec.ipFamilyPolicy`` (``SingleStack``, ``PreferDualStack``,
``RequireDualStack``), ``spec.ipFamilies`` and ``spec.clusterIPs`` say what it
wants; :func:`plan_families` turns that into the families it gets, in order,
or refuses in Kubernetes' words (``this cluster is not configured for
dual-stack services``). The ClusterIP allocator and the apply-time check both
call it, so both doors decide the same.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from shiftnet.api import ClusterNetwork, Service
from shiftnet.api.core import IPV4, IPV6, REQUIRE_DUAL_STACK, SINGLE_STACK
from shiftnet.api.network import SECONDARY_SERVICE_NETWORK_ANNOTATION
from shiftnet.errors import InvalidAllocation

SECONDARY_ANNOTATION = SECONDARY_SERVICE_NETWORK_ANNOTATION


def family_of(ip: str) -> str:
    """``IPv4`` or ``IPv6`` of an address already validated."""
    return IPV4 if ipaddress.ip_address(ip).version == 4 else IPV6


def network_family(cidr: str) -> str:
    return IPV4 if ipaddress.ip_network(cidr, strict=False).version == 4 else IPV6


def other_family(family: str) -> str:
    return IPV6 if family == IPV4 else IPV4


@dataclass(frozen=True)
class ServiceNetworks:
    """The cluster's service networks: the primary, and optionally one of the other family."""

    primary: str
    secondary: str | None = None

    @classmethod
    def of(cls, cn: ClusterNetwork | None) -> ServiceNetworks | None:
        """What ClusterNetwork ``default`` records; None before a master wrote it."""
        if cn is None or not cn.service_network:
            return None
        return cls(cn.service_network, cn.metadata.annotations.get(SECONDARY_ANNOTATION) or None)

    @property
    def default_family(self) -> str:
        return network_family(self.primary)

    @property
    def secondary_family(self) -> str | None:
        return network_family(self.secondary) if self.secondary else None

    @property
    def by_family(self) -> dict[str, str]:
        out = {self.default_family: self.primary}
        if self.secondary:
            out[network_family(self.secondary)] = self.secondary
        return out


@dataclass(frozen=True)
class FamilyPlan:
    """What a Service gets: its policy, its families in order, and the addresses it asked
    for (index ``i`` belongs to ``families[i]``; shorter when some are to be allocated)."""

    policy: str
    families: tuple[str, ...]
    requested: tuple[str, ...]
    headless: bool = False


def _refused(svc: Service, field: str, value: str, reason: str) -> InvalidAllocation:
    message = (
        f'Service "{svc.namespace}/{svc.name}" is invalid: {field}: '
        f'Invalid value: "{value}": {reason}'
    )
    return InvalidAllocation(message, field, value, reason)


def requested_ips(svc: Service) -> list[str]:
    """The ClusterIPs a Service asks for, primary first, without ``None``: ``clusterIP``
    wins over ``clusterIPs[0]`` (an old client changes only the singular field)."""
    spec = svc.spec
    ips = list(spec.cluster_ips or [])
    if spec.cluster_ip:
        ips[:1] = [spec.cluster_ip]
    return [ip for ip in ips if ip != "None"]


def _same(ips: Sequence[str], others: Sequence[str]) -> bool:
    return [ipaddress.ip_address(i) for i in ips] == [ipaddress.ip_address(o) for o in others]


def default_policy(svc: Service) -> str:
    """Kubernetes' default: RequireDualStack when two IPs or two families are given, or
    for a headless Service without selector; SingleStack otherwise."""
    spec = svc.spec
    if len(spec.cluster_ips or []) == 2 or len(spec.ip_families or []) == 2:
        return REQUIRE_DUAL_STACK
    if spec.headless and not spec.selector:
        return REQUIRE_DUAL_STACK
    return SINGLE_STACK


def plan_families(svc: Service, networks: ServiceNetworks, held: Sequence[str] = ()) -> FamilyPlan:
    """The families ``svc`` gets on a cluster with ``networks``; InvalidAllocation when
    its request cannot be honoured here.

    ``held`` are the ClusterIPs the Service holds already: with ``SingleStack`` an
    unchanged pair is cut to its primary (how a user gives the second one back).
    """
    spec = svc.spec
    policy = spec.ip_family_policy or default_policy(svc)
    ips = requested_ips(svc)
    for i, ip in enumerate(ips):
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            field = "spec.clusterIP" if i == 0 else f"spec.clusterIPs[{i}]"
            raise _refused(svc, field, ip, f'"{ip}" is not a valid IP address') from None
    families = list(spec.ip_families or [])
    if policy == SINGLE_STACK and len(held) > 1:
        if _same(ips, held):
            ips = ips[:1]
        if families == [family_of(ip) for ip in held]:
            families = families[:1]
    if policy == SINGLE_STACK:
        many = (
            "cluster IPs are specified"
            if len(ips) == 2
            else "IP families are specified"
            if len(families) == 2
            else None
        )
        if many:
            raise _refused(
                svc,
                "spec.ipFamilyPolicy",
                policy,
                f"must be 'RequireDualStack' or 'PreferDualStack' when multiple {many}",
            )
    configured = networks.by_family
    for i, ip in enumerate(ips):
        family = family_of(ip)
        if i >= len(families):
            if family not in configured:
                raise _refused(
                    svc, f"spec.clusterIPs[{i}]", ip, f"{family} is not configured on this cluster"
                )
            families.append(family)
    if spec.headless and not spec.selector:
        # headless without selector: any families, even ones the cluster lacks
        families = families or [networks.default_family]
        if len(families) < 2 and policy != SINGLE_STACK:
            families.append(other_family(families[0]))
        return FamilyPlan(policy, tuple(families), (), headless=True)
    if policy == REQUIRE_DUAL_STACK and networks.secondary is None:
        raise _refused(
            svc,
            "spec.ipFamilyPolicy",
            policy,
            "this cluster is not configured for dual-stack services",
        )
    for i, family in enumerate(families):
        if family not in configured:
            raise _refused(svc, f"spec.ipFamilies[{i}]", family, "not configured on this cluster")
    if not families:
        families = [networks.default_family]
    if policy != SINGLE_STACK and len(families) == 1 and networks.secondary is not None:
        families.append(other_family(families[0]))
    return FamilyPlan(policy, tuple(families), tuple(ips), headless=spec.headless)
