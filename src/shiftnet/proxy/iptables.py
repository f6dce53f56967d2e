"""Render the service table as an ``iptables-restore`` input laid out like kube-proxy's (pure).

nat table: ``KUBE-SERVICES`` matches each ClusterIP:port and jumps to the
service chain ``KUBE-SVC-<hash>``; that chain spreads new connections over the
endpoint chains ``KUBE-SEP-<hash>`` with ``statistic --mode random
--probability 1/(n-i)`` (or ``--mode nth`` for exact round robin), after
``recent --rcheck`` rules for ClientIP affinity; an endpoint chain marks hairpin
traffic for masquerade, records the client (``recent --set``) and DNATs.
``KUBE-POSTROUTING`` masquerades marked packets. filter table:
``KUBE-SERVICES`` rejects connections to services without endpoints.

The output is applied with ``iptables-restore --noflush``: every chain we own
is declared (which flushes it), stale ones are deleted with ``-X``, and other
chains in the same tables are left alone.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from shiftnet.errors import InvalidInput
from shiftnet.proxy.model import ServiceEntry, ServiceTable, canonical_ipv4
from shiftnet.proxy.names import endpoint_hash, service_hash

MASQ_MARK = "0x4000"
SPREADS = ("random", "roundrobin")
OWN_CHAINS_NAT = ("KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ")
OWN_CHAINS_FILTER = ("KUBE-SERVICES",)
# jumps from built-in chains, ensured by the driver with ``iptables -C || -I``
JUMPS = (
    ("nat", "PREROUTING", "KUBE-SERVICES"),
    ("nat", "OUTPUT", "KUBE-SERVICES"),
    ("nat", "POSTROUTING", "KUBE-POSTROUTING"),
    ("filter", "FORWARD", "KUBE-SERVICES"),
    ("filter", "OUTPUT", "KUBE-SERVICES"),
)

_COMMENT_RE = re.compile(r"^[A-Za-z0-9._/: -]{1,200}$")
_CHAIN_RE = re.compile(r"^KUBE-(SVC|SEP)-[A-Z2-7]{16}$")


def ipt_value(kind: str, value: object) -> str:
    """The one gate for values rendered into iptables-restore input: validates and formats.

    kinds: ``ipv4`` (as /32), ``cidr``, ``port``, ``proto``, ``seconds``,
    ``comment`` (quoted), ``chain`` (one of our hashed chain names).
    """
    text = str(value)
    if kind == "ipv4":
        ip = canonical_ipv4(text)
        if ip is None:
            raise InvalidInput(f"iptables: {text!r} is not an IPv4 address")
        return f"{ip}/32"
    if kind == "cidr":
        try:
            return str(ipaddress.IPv4Network(text, strict=False))
        except ValueError:
            raise InvalidInput(f"iptables: {text!r} is not an IPv4 CIDR") from None
    if kind == "port":
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536:
            return str(value)
        raise InvalidInput(f"iptables: {text!r} is not a port number")
    if kind == "proto":
        if text.upper() in ("TCP", "UDP"):
            return text.lower()
        raise InvalidInput(f"iptables: {text!r} is not tcp or udp")
    if kind == "seconds":
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return str(value)
        raise InvalidInput(f"iptables: {text!r} is not a positive number of seconds")
    if kind == "comment":
        if _COMMENT_RE.match(text):
            return f'"{text}"'
        raise InvalidInput(f"iptables: comment {text!r} has characters outside [A-Za-z0-9._/: -]")
    if kind == "chain":
        if _CHAIN_RE.match(text) or text in OWN_CHAINS_NAT:
            return text
        raise InvalidInput(f"iptables: {text!r} is not a chain shiftnet owns")
    raise InvalidInput(f"iptables: unknown value kind {kind!r}")


@dataclass(frozen=True)
class IptConfig:
    spread: str = "random"
    cluster_cidr: str | None = None
    masquerade_all: bool = False

    def __post_init__(self) -> None:
        if self.spread not in SPREADS:
            raise InvalidInput(
                f"iptables: spread {self.spread!r} is not one of {', '.join(SPREADS)}"
            )
        if self.cluster_cidr is not None:
            ipt_value("cidr", self.cluster_cidr)


def svc_chain(entry: ServiceEntry) -> str:
    return f"KUBE-SVC-{service_hash(entry)}"


def sep_chain(entry: ServiceEntry, index: int) -> str:
    return f"KUBE-SEP-{endpoint_hash(entry, entry.backends[index])}"


def _match(entry: ServiceEntry) -> str:
    proto = ipt_value("proto", entry.protocol)
    return (
        f"-d {ipt_value('ipv4', entry.cluster_ip)} -p {proto} -m {proto} "
        f"--dport {ipt_value('port', entry.port)}"
    )


def _service_rules(entry: ServiceEntry, config: IptConfig) -> tuple[list[str], list[str]]:
    """(chains, rules) of one service port with endpoints."""
    svc = svc_chain(entry)
    comment = f"-m comment --comment {ipt_value('comment', str(entry.id))}"
    chains = [svc]
    rules: list[str] = []
    if config.masquerade_all:
        rules.append(f"-A KUBE-SERVICES {comment} {_match(entry)} -j KUBE-MARK-MASQ")
    elif config.cluster_cidr:
        cidr = ipt_value("cidr", config.cluster_cidr)
        rules.append(f"-A KUBE-SERVICES {comment} ! -s {cidr} {_match(entry)} -j KUBE-MARK-MASQ")
    rules.append(f"-A KUBE-SERVICES {comment} {_match(entry)} -j {svc}")
    seps = [sep_chain(entry, i) for i in range(len(entry.backends))]
    chains += seps
    seconds = ipt_value("seconds", entry.affinity_timeout)
    if entry.affinity:
        for sep in seps:
            rules.append(
                f"-A {svc} {comment} -m recent --name {sep} --mask 255.255.255.255 --rsource "
                f"--rcheck --seconds {seconds} --reap -j {sep}"
            )
    n = len(seps)
    for i, sep in enumerate(seps):
        if i == n - 1:
            rules.append(f"-A {svc} {comment} -j {sep}")
        elif config.spread == "roundrobin":
            rules.append(
                f"-A {svc} {comment} -m statistic --mode nth --every {n - i} --packet 0 -j {sep}"
            )
        else:
            rules.append(
                f"-A {svc} {comment} -m statistic --mode random "
                f"--probability {1 / (n - i):.11f} -j {sep}"
            )
    proto = ipt_value("proto", entry.protocol)
    for backend, sep in zip(entry.backends, seps, strict=True):
        ip = ipt_value("ipv4", backend.ip)
        target = f"{ip.removesuffix('/32')}:{ipt_value('port', backend.port)}"
        rules.append(f"-A {sep} {comment} -s {ip} -j KUBE-MARK-MASQ")
        recent = (
            f"-m recent --name {sep} --mask 255.255.255.255 --rsource --set "
            if entry.affinity
            else ""
        )
        rules.append(
            f"-A {sep} {comment} -p {proto} {recent}-m {proto} -j DNAT --to-destination {target}"
        )
    return chains, rules


def render_restore(
    table: ServiceTable, config: IptConfig, stale_chains: Iterable[str] = ()
) -> tuple[str, set[str]]:
    """The restore input and the set of KUBE-SVC/KUBE-SEP chains it creates."""
    filter_rules: list[str] = []
    nat_chains: list[str] = []
    nat_rules: list[str] = []
    for entry in table.sorted_entries():
        if not entry.backends:
            comment = ipt_value("comment", f"{entry.id} has no endpoints")
            filter_rules.append(
                f"-A KUBE-SERVICES -m comment --comment {comment} {_match(entry)} "
                "-j REJECT --reject-with icmp-port-unreachable"
            )
            continue
        chains, rules = _service_rules(entry, config)
        nat_chains += chains
        nat_rules += rules
    owned = set(nat_chains)
    out = [
        "*filter",
        *(f":{c} - [0:0]" for c in OWN_CHAINS_FILTER),
        *filter_rules,
        "COMMIT",
        "*nat",
    ]
    out += [f":{c} - [0:0]" for c in OWN_CHAINS_NAT]
    out += [f":{c} - [0:0]" for c in nat_chains]
    stale = sorted(set(stale_chains) - owned)
    out += [f":{ipt_value('chain', c)} - [0:0]" for c in stale]  # flush before delete
    out += [
        f"-A KUBE-POSTROUTING -m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN",
        f"-A KUBE-POSTROUTING -j MARK --xor-mark {MASQ_MARK}",
        "-A KUBE-POSTROUTING -j MASQUERADE --random-fully",
        f"-A KUBE-MARK-MASQ -j MARK --or-mark {MASQ_MARK}",
    ]
    out += nat_rules
    out += [f"-X {c}" for c in stale]
    out.append("COMMIT")
    return "\n".join(out) + "\n", owned
