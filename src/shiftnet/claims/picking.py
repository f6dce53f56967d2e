"""Which loopback ranges and ports one cluster uses, beside the others on this machine (pure).

The rules, in order, for each network (pod network, service network) and
each port (router HTTP, HTTPS, stats, DNS):

1. **A flag wins** (``--cluster-network``, ``--http-port``, ...). A network
   flag that differs from the one the cluster's store already holds is an
   error: its pods and ClusterIPs live there, so it cannot move.
2. **A cluster keeps what it had**: the networks recorded in its store
   (ClusterNetwork ``default``) or its state directory's record, and the
   ports of that record. A restart never moves them.
3. **A new cluster takes the lowest free one**: the first /16 of a fixed
   pool that no other cluster claims and where nothing is bound right now;
   the role's default port, else the next port above it that no other
   cluster claims and nothing holds.

A value given or kept that another cluster claims, or that someone else
holds right now, is one :class:`~shiftnet.errors.ConfigError` naming the
value, the other user and the flag that changes it. Nothing here does I/O:
the caller passes the other clusters' claims, the bound addresses and a
function that says who holds a port.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shiftnet.errors import ConfigError
from shiftnet.master.config import DEFAULTS

POOL_SIZE = 20  # /16 networks per pool: up to 20 clusters side by side
PORT_SEARCH = 100  # ports tried above a role's base port before giving up

GIVEN, KEPT, NEW = "given", "kept", "new"


@dataclass(frozen=True)
class NetworkRole:
    name: str  # key in records
    label: str  # how messages name it
    flag: str  # the flag that sets it
    pool: tuple[str, ...]  # where a new cluster's network comes from, lowest first


@dataclass(frozen=True)
class PortRole:
    name: str
    label: str
    flag: str
    base: int  # the default without root, and where the search for a free port starts
    root_default: int = 0  # tried first when running as root (80, 443); 0: none


def loopback_pool(first: str, size: int = POOL_SIZE) -> tuple[str, ...]:
    """``size`` adjacent networks of ``first``'s size, starting with ``first``."""
    net = ipaddress.IPv4Network(first)
    step = net.num_addresses
    start = int(net.network_address)
    return tuple(str(ipaddress.IPv4Network((start + i * step, net.prefixlen))) for i in range(size))


NETWORK_ROLES: tuple[NetworkRole, ...] = (
    NetworkRole(
        "clusterNetwork",
        "cluster network",
        "--cluster-network",
        loopback_pool(DEFAULTS["local"][0]),
    ),
    NetworkRole(
        "serviceNetwork",
        "service network",
        "--service-network",
        loopback_pool(DEFAULTS["local"][2]),
    ),
)

PORT_ROLES: tuple[PortRole, ...] = (
    PortRole("routerHTTP", "router HTTP port", "--http-port (ROUTER_SERVICE_HTTP_PORT)", 10080, 80),
    PortRole(
        "routerHTTPS", "router HTTPS port", "--https-port (ROUTER_SERVICE_HTTPS_PORT)", 10443, 443
    ),
    PortRole("routerStats", "router stats port", "--stats-port (STATS_PORT)", 1936),
    PortRole("dns", "cluster DNS port", "--dns-listen (SHIFTNET_DNS_LISTEN)", 8053),
    PortRole("api", "Kubernetes API port", "--api-listen (SHIFTNET_API_LISTEN)", 6443),
)


@dataclass(frozen=True)
class Claims:
    """What one cluster holds on this machine: networks by role name, ports by role name
    (0: that listener is off)."""

    networks: Mapping[str, str] = field(default_factory=dict)
    ports: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"networks": dict(sorted(self.networks.items())), "ports": dict(self.ports)}

    @classmethod
    def from_json(cls, data: Any) -> Claims:
        """ConfigError when ``data`` is not what :meth:`to_json` writes."""
        if not isinstance(data, dict):
            raise ConfigError("claims record is not a JSON object")
        nets, ports = data.get("networks", {}), data.get("ports", {})
        if not isinstance(nets, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in nets.items()
        ):
            raise ConfigError("claims record: networks must map names to CIDRs")
        if not isinstance(ports, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and 0 <= v <= 65535 for k, v in ports.items()
        ):
            raise ConfigError("claims record: ports must map names to port numbers")
        return cls(networks=dict(nets), ports=dict(ports))


@dataclass(frozen=True)
class OtherCluster:
    """Another cluster's claims, as the machine's registry has them."""

    state_dir: str
    claims: Claims


@dataclass(frozen=True)
class Request:
    """What this start brings: flags, what the store holds, the state directory's record."""

    given_networks: Mapping[str, str] = field(default_factory=dict)
    stored_networks: Mapping[str, str] = field(default_factory=dict)
    given_ports: Mapping[str, int] = field(default_factory=dict)
    kept: Claims | None = None
    root: bool = False


@dataclass(frozen=True)
class Decision:
    claims: Claims
    origins: Mapping[str, str]  # role name -> GIVEN | KEPT | NEW


PortUser = Callable[[str, int, bool], str | None]
"""``(role name, port, new)`` -> who holds the port right now ("pid 42 (haproxy)"), or
None when it is free for this cluster. ``new`` asks for the strict probe of a fresh pick."""


def _network(text: str, role: NetworkRole, where: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(text.strip(), strict=True)
    except ValueError as exc:
        raise ConfigError(f'{role.label} "{text}" ({where}) is not a valid CIDR: {exc}') from None
    if not isinstance(net, ipaddress.IPv4Network):
        raise ConfigError(f'{role.label} "{text}" ({where}) must be an IPv4 loopback network')
    return net


def _label(name: str) -> str:
    roles = {r.name: r.label for r in NETWORK_ROLES} | {r.name: r.label for r in PORT_ROLES}
    return roles.get(name, name)


def _network_holder(
    net: ipaddress.IPv4Network, others: Iterable[OtherCluster]
) -> tuple[OtherCluster, str, str] | None:
    """The first other cluster with a network overlapping ``net``: (cluster, role, CIDR)."""
    for other in others:
        for name, cidr in sorted(other.claims.networks.items()):
            try:
                theirs = ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                continue
            if net.overlaps(theirs):
                return other, name, cidr
    return None


def _resolve_networks(
    req: Request, others: list[OtherCluster], busy: list[ipaddress.IPv4Address]
) -> tuple[dict[str, str], dict[str, str]]:
    chosen: dict[str, ipaddress.IPv4Network] = {}
    origins: dict[str, str] = {}
    kept = req.kept.networks if req.kept is not None else {}
    for role in NETWORK_ROLES:
        given, stored = req.given_networks.get(role.name), req.stored_networks.get(role.name)
        if given:
            net = _network(given, role, role.flag)
            if stored and _network(stored, role, "stored") != net:
                raise ConfigError(
                    f"{role.label} {net} ({role.flag}) differs from {stored}, the {role.label} "
                    f"this cluster keeps in its store: leave out {role.flag}, or start a new "
                    "cluster with another --state-dir"
                )
            origin = GIVEN
        elif stored or kept.get(role.name):
            net = _network(stored or kept[role.name], role, "kept by this cluster")
            origin = KEPT
        else:
            continue
        holder = _network_holder(net, others)
        if holder is not None:
            other, their_role, cidr = holder
            whose = f"the {_label(their_role)} of the shiftnet cluster in {other.state_dir}"
            if origin == GIVEN:
                raise ConfigError(
                    f"{role.label} {net} ({role.flag}) overlaps {cidr}, {whose}: "
                    f"choose another {role.flag}"
                )
            raise ConfigError(
                f"{role.label} {net} of this cluster overlaps {cidr}, {whose}: the two cannot "
                "run side by side; stop using one of them, or start this one with another "
                "--state-dir"
            )
        if origin == GIVEN and not stored:
            inside = sorted(a for a in busy if a in net)
            if inside:
                raise ConfigError(
                    f"{role.label} {net} ({role.flag}) has addresses in use on this machine "
                    f"({', '.join(map(str, inside[:3]))}): choose another {role.flag}"
                )
        chosen[role.name], origins[role.name] = net, origin
    for role in NETWORK_ROLES:
        if role.name in chosen:
            continue
        for cidr in role.pool:
            net = ipaddress.IPv4Network(cidr)
            if _network_holder(net, others) is not None:
                continue
            if any(net.overlaps(mine) for mine in chosen.values()):
                continue
            if any(a in net for a in busy):
                continue
            chosen[role.name], origins[role.name] = net, NEW
            break
        else:
            raise ConfigError(
                f"no free {role.label} is left for a new cluster: {role.pool[0]} to "
                f"{role.pool[-1]} are claimed by other shiftnet clusters or in use; "
                f"pass {role.flag} CIDR"
            )
    return {name: str(net) for name, net in chosen.items()}, origins


def _port_holder(port: int, others: Iterable[OtherCluster]) -> tuple[OtherCluster, str] | None:
    for other in others:
        for name, theirs in sorted(other.claims.ports.items()):
            if theirs and theirs == port:
                return other, name
    return None


def _check_port(
    role: PortRole,
    port: int,
    origin: str,
    mine: Mapping[int, str],
    others: list[OtherCluster],
    port_user: PortUser,
) -> None:
    how = f"({role.flag})" if origin == GIVEN else "of this cluster"
    if port in mine:
        raise ConfigError(
            f"{role.label} {port} {how} is also this cluster's {_label(mine[port])}: "
            f"choose another with {role.flag}"
        )
    holder = _port_holder(port, others)
    if holder is not None:
        other, their_role = holder
        raise ConfigError(
            f"{role.label} {port} {how} is claimed by the shiftnet cluster in {other.state_dir} "
            f"(its {_label(their_role)}): choose another with {role.flag}"
        )
    user = port_user(role.name, port, False)
    if user is not None:
        raise ConfigError(
            f"{role.label} {port} {how} is in use by {user}: choose another with {role.flag}"
        )


def _candidates(role: PortRole, root: bool) -> list[int]:
    first = [role.root_default] if root and role.root_default else []
    return first + [p for p in range(role.base, role.base + PORT_SEARCH) if p not in first]


def _resolve_ports(
    req: Request, others: list[OtherCluster], port_user: PortUser
) -> tuple[dict[str, int], dict[str, str]]:
    ports: dict[str, int] = {}
    origins: dict[str, str] = {}
    mine: dict[int, str] = {}  # port -> role name, of this cluster
    kept = req.kept.ports if req.kept is not None else {}
    # Given ports first, then kept ones, then new picks: a flag is never pushed aside.
    for origin in (GIVEN, KEPT):
        for role in PORT_ROLES:
            if role.name in ports:
                continue
            value = req.given_ports.get(role.name) if origin == GIVEN else kept.get(role.name)
            if value is None or (origin == KEPT and value == 0):
                continue
            if value:
                _check_port(role, value, origin, mine, others, port_user)
                mine[value] = role.name
            ports[role.name], origins[role.name] = value, origin
    for role in PORT_ROLES:
        if role.name in ports:
            continue
        for port in _candidates(role, req.root):
            if port in mine or _port_holder(port, others) is not None:
                continue
            if port_user(role.name, port, True) is not None:
                continue
            ports[role.name], origins[role.name] = port, NEW
            mine[port] = role.name
            break
        else:
            raise ConfigError(
                f"no free {role.label} found from {role.base} to {role.base + PORT_SEARCH - 1}: "
                f"choose one with {role.flag}"
            )
    return ports, origins


def resolve(
    req: Request,
    others: Iterable[OtherCluster],
    busy_addresses: Iterable[ipaddress.IPv4Address],
    port_user: PortUser,
) -> Decision:
    """This cluster's networks and ports by the rules of the module docstring."""
    peers = sorted(others, key=lambda o: o.state_dir)
    networks, net_origins = _resolve_networks(req, peers, sorted(set(busy_addresses)))
    ports, port_origins = _resolve_ports(req, peers, port_user)
    return Decision(Claims(networks, ports), {**net_origins, **port_origins})


def describe(decision: Decision) -> str:
    """One line for the start-up output: each value and whether it was given, kept or new."""
    parts = [
        f"{role.label} {decision.claims.networks[role.name]} ({decision.origins[role.name]})"
        for role in NETWORK_ROLES
    ]
    for role in PORT_ROLES:
        port = decision.claims.ports.get(role.name, 0)
        if port:
            parts.append(f"{role.label} {port} ({decision.origins[role.name]})")
    return ", ".join(parts)
