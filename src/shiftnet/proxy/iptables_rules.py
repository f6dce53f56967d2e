"""Typed iptables rules and chains: what the iptables mode wants, before any syntax (pure).

The layout (``iptables_layout``) builds these; the one writer
(``iptables_writer.render_restore_text``) turns them into ``iptables-restore``
input. Keeping the rules as values means a partial sync can compare the
chains a service had with the chains it has now and write only those that
differ, without reading the kernel's ruleset back.
"""

from __future__ import annotations

from dataclasses import dataclass

NAT = "nat"
FILTER = "filter"
TABLES = (FILTER, NAT)  # the order tables appear in a restore input


@dataclass(frozen=True, slots=True)
class Jump:
    """``-j CHAIN``: one of our chains (or KUBE-MARK-MASQ)."""

    chain: str


@dataclass(frozen=True, slots=True)
class Dnat:
    """``-j DNAT --to-destination ip:port``."""

    ip: str
    port: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """``REJECT`` (icmp port unreachable), ``DROP``, ``RETURN`` or ``MASQUERADE``."""

    name: str


@dataclass(frozen=True, slots=True)
class SetMark:
    """``-j MARK --or-mark M`` (or ``--xor-mark`` with ``xor``)."""

    mark: str
    xor: bool = False


Target = Jump | Dnat | Verdict | SetMark


@dataclass(frozen=True, slots=True)
class Recent:
    """``-m recent`` on the source address: ``--rcheck --seconds N --reap`` or ``--set``."""

    name: str
    seconds: int | None = None  # None: --set


@dataclass(frozen=True, slots=True)
class Statistic:
    """``-m statistic``: random with ``probability`` or every ``every``-th packet."""

    probability: float | None = None
    every: int | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: the matches that are set, then the target."""

    target: Target
    comment: str | None = None
    source: str | None = None  # an IPv4 address (/32)
    not_source_cidr: str | None = None  # ``! -s CIDR``
    source_cidr: str | None = None  # ``-s CIDR``
    src_local: bool = False  # ``-m addrtype --src-type LOCAL``
    destination: str | None = None  # an IPv4 address (/32)
    destination_cidr: str | None = None  # a bucket's network
    dst_local: bool = False  # ``-m addrtype --dst-type LOCAL``
    protocol: str | None = None  # TCP / UDP
    dport: int | None = None
    dports: tuple[int, int] | None = None  # a range, ``--dport lo:hi``
    not_marked: str | None = None  # ``-m mark ! --mark M/M``
    hairpin: bool = False  # DNATed, and the packet's destination is its own source
    recent: Recent | None = None
    statistic: Statistic | None = None


@dataclass(frozen=True, slots=True)
class Chain:
    """A chain of ours in one table, with all its rules (a write replaces them all)."""

    table: str
    name: str
    rules: tuple[Rule, ...]

    @property
    def key(self) -> tuple[str, str]:
        return (self.table, self.name)
