"""The iptables mode's layout: service entries -> typed chains, kube-proxy's shape (pure).

Per service port (``<h>`` is 16 base32 characters of a hash of its name):

* ``KUBE-SVC-<h>`` spreads new connections over all ready endpoints
  (``statistic`` random with probability 1/(n-i), or nth for round robin)
  and DNATs; ``KUBE-SVL-<h>`` does the same over the endpoints on this
  node (only when a ``Local`` traffic policy needs it);
* with ClientIP affinity, as kube-proxy: ``-m recent --rcheck`` rules, then
  the spread, jump to a ``KUBE-SEP-<h>`` per endpoint that records the client
  (``recent --set``) and DNATs;
* ``KUBE-EXT-<h>`` for node port, external IP and load-balancer traffic:
  with ``externalTrafficPolicy: Cluster`` it marks for masquerade and jumps to
  the SVC chain; with ``Local`` only traffic from this node (and from the
  cluster CIDR) goes cluster-wide, the rest keeps its source and goes to SVL.

Dispatch differs from kube-proxy in one way: ``KUBE-SERVICES`` does not list
every service. It jumps by destination /24 to a ``KUBE-DST-<h>`` chain that
lists the service addresses in that /24 (and ``KUBE-NODEPORTS`` by ranges of
256 ports to one for those node ports). A packet walks a few dozen rules
instead of one per service, and a partial sync that adds or removes a
service rewrites only its /24's chain, never the whole dispatch list.
Only the filter table's rules (a service port without endpoints) carry the
service port's name as a comment; nat rules carry none (kube-proxy drops them
from its per-service chains in large clusters too): a comment match is 288
bytes of kernel memory per rule, which a legacy restore copies out of the
kernel and back on every change.

A second difference: without affinity there is no chain per endpoint, and
hairpin (an endpoint reaching itself through its service) is one rule in
``KUBE-POSTROUTING`` for all services, not a rule per endpoint: a DNATed
connection whose packet now goes to its own source address (a classic BPF
match, ``-m bpf``, compares the two) is marked for masquerade. 10,000
services of 10 endpoints make 10,000 chains and 110,000 rules instead of
kube-proxy's 110,000 chains and 310,000 rules. The kernel's work for every
iptables-nft transaction grows with the table, and a legacy restore copies
the whole table out of the kernel and back. A kernel without ``xt_bpf``
gets a hairpin rule per endpoint instead (``IptConfig.hairpin_rule``; the
driver probes).

filter ``KUBE-SERVICES`` has the same dispatch and rejects traffic to a
service without endpoints (or drops it when only a ``Local`` policy leaves
it none, as kube-proxy).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shiftnet.errors import InvalidInput
from shiftnet.proxy.iptables_rules import (
    FILTER,
    NAT,
    Chain,
    Dnat,
    Jump,
    Recent,
    Rule,
    SetMark,
    Statistic,
    Verdict,
)
from shiftnet.proxy.iptables_writer import ipt_value
from shiftnet.proxy.model import NODE_PORT_ADDRESS, Backend, ServiceEntry
from shiftnet.proxy.names import endpoint_hash, name_hash, service_hash

MASQ_MARK = "0x4000"
SPREADS = ("random", "roundrobin")
NODE_PORT_RANGE = 256  # node ports per dispatch chain
MARK_MASQ = "KUBE-MARK-MASQ"
SERVICES = "KUBE-SERVICES"
NODEPORTS = "KUBE-NODEPORTS"
POSTROUTING = "KUBE-POSTROUTING"


@dataclass(frozen=True)
class IptConfig:
    spread: str = "random"
    cluster_cidr: str | None = None
    masquerade_all: bool = False
    # hairpin by one rule in KUBE-POSTROUTING (``-m bpf``); False: a rule per endpoint,
    # for kernels without xt_bpf (the driver probes)
    hairpin_rule: bool = True

    def __post_init__(self) -> None:
        if self.spread not in SPREADS:
            raise InvalidInput(
                f"iptables: spread {self.spread!r} is not one of {', '.join(SPREADS)}"
            )
        if self.cluster_cidr is not None:
            ipt_value("cidr", self.cluster_cidr)


@dataclass(frozen=True, order=True)
class Bucket:
    """One dispatch chain: the service addresses in a /24, or a range of node ports."""

    parent: str  # KUBE-SERVICES (addresses) or KUBE-NODEPORTS
    cidr: str = ""
    protocol: str = ""
    low: int = 0
    high: int = 0

    @property
    def chain(self) -> str:
        return "KUBE-DST-" + name_hash(self.parent, self.cidr, self.protocol, str(self.low))

    def jump(self) -> Rule:
        if self.parent == SERVICES:
            return Rule(Jump(self.chain), destination_cidr=self.cidr)
        return Rule(Jump(self.chain), protocol=self.protocol, dports=(self.low, self.high))


def address_bucket(ip: str) -> Bucket:
    return Bucket(SERVICES, cidr=ip.rsplit(".", 1)[0] + ".0/24")


def node_port_bucket(protocol: str, port: int) -> Bucket:
    low = port // NODE_PORT_RANGE * NODE_PORT_RANGE
    return Bucket(NODEPORTS, protocol=protocol, low=max(low, 1), high=low + NODE_PORT_RANGE - 1)


DispatchRules = dict[Bucket, tuple[list[Rule], list[Rule]]]  # bucket -> (nat, filter)


@dataclass(frozen=True)
class EntryRules:
    """Everything one service port contributes: its own chains and its dispatch rules."""

    chains: dict[str, Chain]  # nat chains by name
    dispatch: DispatchRules


def svc_chain(entry: ServiceEntry) -> str:
    return f"KUBE-SVC-{service_hash(entry)}"


def sep_chain(entry: ServiceEntry, backend: Backend) -> str:
    return f"KUBE-SEP-{endpoint_hash(entry, backend)}"


def _pick(i: int, n: int, spread: str) -> Statistic | None:
    """The i-th of n endpoints takes 1/(n-i) of what the earlier ones left (the last: all)."""
    if i == n - 1:
        return None
    if spread == "roundrobin":
        return Statistic(every=n - i)
    return Statistic(probability=1 / (n - i))


def _spread(
    name: str, entry: ServiceEntry, backends: tuple[Backend, ...], config: IptConfig
) -> Chain:
    n = len(backends)
    rules: list[Rule] = []
    spread = config.spread
    if entry.affinity:  # per-endpoint chains: each records and checks its own clients
        seps = [sep_chain(entry, b) for b in backends]
        rules += [Rule(Jump(s), recent=Recent(s, entry.affinity_timeout)) for s in seps]
        rules += [Rule(Jump(sep), statistic=_pick(i, n, spread)) for i, sep in enumerate(seps)]
    else:  # DNAT right here: no chain per endpoint (see the module docstring)
        if not config.hairpin_rule:
            rules += [Rule(Jump(MARK_MASQ), source=b.ip) for b in backends]
        rules += [
            Rule(Dnat(b.ip, b.port), protocol=entry.protocol, statistic=_pick(i, n, spread))
            for i, b in enumerate(backends)
        ]
    return Chain(NAT, name, tuple(rules))


def _endpoint(entry: ServiceEntry, backend: Backend, config: IptConfig) -> Chain:
    sep = sep_chain(entry, backend)
    recent = Recent(sep) if entry.affinity else None
    dnat = Rule(Dnat(backend.ip, backend.port), protocol=entry.protocol, recent=recent)
    if config.hairpin_rule:
        return Chain(NAT, sep, (dnat,))
    return Chain(NAT, sep, (Rule(Jump(MARK_MASQ), source=backend.ip), dnat))


def _external(entry: ServiceEntry, name: str, svc: str, svl: str, config: IptConfig) -> Chain:
    if not entry.external_local:
        return Chain(NAT, name, (Rule(Jump(MARK_MASQ)), Rule(Jump(svc))))
    rules: list[Rule] = []
    if config.cluster_cidr:  # pods reaching an external address go cluster-wide
        rules.append(Rule(Jump(svc), source_cidr=config.cluster_cidr))
    rules += [
        Rule(Jump(MARK_MASQ), src_local=True),  # the node itself: no source to keep
        Rule(Jump(svc), src_local=True),
        Rule(Jump(svl)),
    ]
    return Chain(NAT, name, tuple(rules))


def describe(entry: ServiceEntry, config: IptConfig) -> EntryRules:
    """The chains and dispatch rules of one service port."""
    h = service_hash(entry)
    svc, svl, ext = f"KUBE-SVC-{h}", f"KUBE-SVL-{h}", f"KUBE-EXT-{h}"
    chains: dict[str, Chain] = {}
    if entry.backends:
        chains[svc] = _spread(svc, entry, entry.backends, config)
        for backend in entry.backends if entry.affinity else ():
            sep = _endpoint(entry, backend, config)
            chains[sep.name] = sep
    external = entry.external_vips
    if entry.local_backends and (entry.internal_local or (entry.external_local and external)):
        chains[svl] = _spread(svl, entry, entry.local_backends, config)
    if external and entry.external_backends:
        chains[ext] = _external(entry, ext, svc, svl, config)

    dispatch: DispatchRules = {}
    comment = str(entry.id)

    def refuse(bucket: Bucket, match: Rule) -> None:
        # no endpoint at all: reject (the client learns at once); only a Local policy
        # leaves none: drop, as kube-proxy
        verdict, why = ("DROP", "has no local endpoints") if entry.backends else ("REJECT", "")
        why = why or "has no endpoints"
        rule = _with(match, Verdict(verdict), f"{comment} {why}")
        dispatch.setdefault(bucket, ([], []))[1].append(rule)

    cluster = Rule(  # nat rules carry no comment: see the module docstring
        Jump(svl if entry.internal_local else svc),
        destination=entry.cluster_ip,
        protocol=entry.protocol,
        dport=entry.port,
    )
    bucket = address_bucket(entry.cluster_ip)
    if entry.cluster_backends:
        nat = dispatch.setdefault(bucket, ([], []))[0]
        if config.masquerade_all:
            nat.append(_with(cluster, Jump(MARK_MASQ)))
        elif config.cluster_cidr:
            nat.append(_with(cluster, Jump(MARK_MASQ), not_source=config.cluster_cidr))
        nat.append(cluster)
    else:
        refuse(bucket, cluster)
    for ip, protocol, port in external:
        if ip == NODE_PORT_ADDRESS:
            bucket = node_port_bucket(protocol, port)
            match = Rule(Jump(ext), protocol=protocol, dport=port)
        else:
            bucket = address_bucket(ip)
            match = Rule(Jump(ext), destination=ip, protocol=protocol, dport=port)
        if entry.external_backends:
            dispatch.setdefault(bucket, ([], []))[0].append(match)
        else:
            refuse(bucket, match)
    return EntryRules(chains, dispatch)


def _with(
    rule: Rule,
    target: Jump | Verdict,
    comment: str | None = None,
    not_source: str | None = None,
) -> Rule:
    return Rule(
        target,
        comment=comment,
        not_source_cidr=not_source,
        destination=rule.destination,
        protocol=rule.protocol,
        dport=rule.dport,
    )


def bucket_chain(table: str, bucket: Bucket, rules: Iterable[Rule]) -> Chain:
    return Chain(table, bucket.chain, tuple(rules))


def top_chains(table: str, buckets: Iterable[Bucket]) -> list[Chain]:
    """KUBE-SERVICES (address buckets, then node ports for local addresses) and
    KUBE-NODEPORTS (node port buckets) of one table."""
    ordered = sorted(buckets)
    services = [b.jump() for b in ordered if b.parent == SERVICES]
    services.append(Rule(Jump(NODEPORTS), dst_local=True))
    node_ports = [b.jump() for b in ordered if b.parent == NODEPORTS]
    return [Chain(table, SERVICES, tuple(services)), Chain(table, NODEPORTS, tuple(node_ports))]


def static_chains(config: IptConfig) -> list[Chain]:
    """KUBE-MARK-MASQ and KUBE-POSTROUTING: the masquerade mark and where it is used
    (and, with ``hairpin_rule``, the one rule that marks every hairpin connection)."""
    hairpin = (Rule(Jump(MARK_MASQ), hairpin=True),) if config.hairpin_rule else ()
    return [
        Chain(NAT, MARK_MASQ, (Rule(SetMark(MASQ_MARK)),)),
        Chain(
            NAT,
            POSTROUTING,
            (
                *hairpin,
                Rule(Verdict("RETURN"), not_marked=MASQ_MARK),
                Rule(SetMark(MASQ_MARK, xor=True)),
                Rule(Verdict("MASQUERADE")),
            ),
        ),
    ]


# jumps from built-in chains, ensured by the driver with ``iptables -C || -I``
JUMPS = (
    (NAT, "PREROUTING", SERVICES),
    (NAT, "OUTPUT", SERVICES),
    (NAT, "POSTROUTING", POSTROUTING),
    (FILTER, "INPUT", SERVICES),
    (FILTER, "FORWARD", SERVICES),
    (FILTER, "OUTPUT", SERVICES),
)
