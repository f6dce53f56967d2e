"""The one writer of iptables syntax: typed chains -> ``iptables-restore --noflush`` input (pure).

Every value that reaches the text passes :func:`ipt_value`, the one gate
that validates and formats it; nothing else in shiftnet writes iptables
rules. The input declares each chain it writes (``:NAME - [0:0]``, which
flushes it under ``--noflush``), appends that chain's rules, and ends with
``-X`` for the chains it deletes, so one restore is one kernel transaction
and chains it does not name are left as they are.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from shiftnet.errors import InvalidInput
from shiftnet.proxy.iptables_rules import TABLES, Chain, Dnat, Jump, Rule, SetMark, Verdict
from shiftnet.proxy.model import canonical_ipv4

# chains every ruleset has (the rest are a prefix and a hash, see iptables_layout)
STATIC_CHAINS = (
    "KUBE-SERVICES",
    "KUBE-NODEPORTS",
    "KUBE-POSTROUTING",
    "KUBE-MARK-MASQ",
    "KUBE-HAIRPIN-PROBE",  # exists only during the driver's probe (``render_hairpin_probe``)
)
HASHED_PREFIXES = ("SVC", "SVL", "EXT", "SEP", "DST")
HASHED_CHAIN_RE = re.compile(r"^KUBE-(?:SVC|SVL|EXT|SEP|DST)-[A-Z2-7]{16}$")
_COMMENT_RE = re.compile(r"^[A-Za-z0-9._/: -]{1,200}$")
_MARK_RE = re.compile(r"^0x[0-9a-f]{1,8}$")
# classic BPF over the IPv4 header (skb data at netfilter's IP hooks): match when the
# source address (offset 12) equals the destination (offset 16); "count,code jt jf k,..."
_SAME_ADDRESS_BPF = "6,32 0 0 12,7 0 0 0,32 0 0 16,29 0 1 0,6 0 0 1,6 0 0 0"
_VERDICTS = {
    "REJECT": "REJECT --reject-with icmp-port-unreachable",
    "DROP": "DROP",
    "RETURN": "RETURN",
    "MASQUERADE": "MASQUERADE --random-fully",
}


def ipt_value(kind: str, value: object) -> str:
    """The one gate for values rendered into iptables-restore input: validates and formats.

    kinds: ``ipv4`` (as /32), ``cidr``, ``port``, ``proto``, ``seconds``, ``count``,
    ``comment`` (quoted), ``chain`` (a chain shiftnet owns), ``table``,
    ``mark``, ``probability``.
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
    if kind in ("seconds", "count"):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return str(value)
        what = "number of seconds" if kind == "seconds" else "count"
        raise InvalidInput(f"iptables: {text!r} is not a positive {what}")
    if kind == "comment":
        if _COMMENT_RE.match(text):
            return f'"{text}"'
        raise InvalidInput(f"iptables: comment {text!r} has characters outside [A-Za-z0-9._/: -]")
    if kind == "chain":
        if HASHED_CHAIN_RE.match(text) or text in STATIC_CHAINS:
            return text
        raise InvalidInput(f"iptables: {text!r} is not a chain shiftnet owns")
    if kind == "table":
        if text in TABLES:
            return text
        raise InvalidInput(f"iptables: {text!r} is not a table shiftnet writes")
    if kind == "mark":
        if _MARK_RE.match(text):
            return text
        raise InvalidInput(f"iptables: {text!r} is not a hexadecimal mark")
    if kind == "probability":
        if isinstance(value, float) and 0.0 < value < 1.0:
            return f"{value:.11f}"
        raise InvalidInput(f"iptables: {text!r} is not a probability in (0, 1)")
    raise InvalidInput(f"iptables: unknown value kind {kind!r}")


def _target(target: Jump | Dnat | Verdict | SetMark, proto: str | None) -> str:
    if isinstance(target, Jump):
        return f"-j {ipt_value('chain', target.chain)}"
    if isinstance(target, Dnat):
        ip = ipt_value("ipv4", target.ip).removesuffix("/32")
        return f"-j DNAT --to-destination {ip}:{ipt_value('port', target.port)}"
    if isinstance(target, SetMark):
        op = "--xor-mark" if target.xor else "--or-mark"
        return f"-j MARK {op} {ipt_value('mark', target.mark)}"
    verdict = _VERDICTS.get(target.name)
    if verdict is None:
        raise InvalidInput(f"iptables: {target.name!r} is not a verdict shiftnet writes")
    return f"-j {verdict}"


def render_rule(chain: str, rule: Rule) -> str:
    """``-A CHAIN matches... -j target`` in kube-proxy's order of matches."""
    parts = [f"-A {ipt_value('chain', chain)}"]
    if rule.comment is not None:
        parts.append(f"-m comment --comment {ipt_value('comment', rule.comment)}")
    if rule.source is not None:
        parts.append(f"-s {ipt_value('ipv4', rule.source)}")
    if rule.source_cidr is not None:
        parts.append(f"-s {ipt_value('cidr', rule.source_cidr)}")
    if rule.not_source_cidr is not None:
        parts.append(f"! -s {ipt_value('cidr', rule.not_source_cidr)}")
    if rule.destination is not None:
        parts.append(f"-d {ipt_value('ipv4', rule.destination)}")
    if rule.destination_cidr is not None:
        parts.append(f"-d {ipt_value('cidr', rule.destination_cidr)}")
    if rule.src_local:
        parts.append("-m addrtype --src-type LOCAL")
    if rule.dst_local:
        parts.append("-m addrtype --dst-type LOCAL")
    if rule.hairpin:
        parts.append(f'-m conntrack --ctstate DNAT -m bpf --bytecode "{_SAME_ADDRESS_BPF}"')
    if rule.not_marked is not None:
        mark = ipt_value("mark", rule.not_marked)
        parts.append(f"-m mark ! --mark {mark}/{mark}")
    proto = ipt_value("proto", rule.protocol) if rule.protocol is not None else None
    if proto is not None:
        parts.append(f"-p {proto}")
    if rule.recent is not None:
        recent = rule.recent
        name = ipt_value("chain", recent.name)
        action = (
            "--set"
            if recent.seconds is None
            else f"--rcheck --seconds {ipt_value('seconds', recent.seconds)} --reap"
        )
        parts.append(f"-m recent --name {name} --mask 255.255.255.255 --rsource {action}")
    if rule.dport is not None or rule.dports is not None:
        # ``-m tcp`` only with a port: ``-p`` alone is part of the rule's header, and an
        # empty ``-m tcp`` is 48 bytes of kernel memory a legacy restore copies twice
        if proto is None:
            raise InvalidInput("iptables: a destination port needs a protocol")
        if rule.dport is not None:
            parts.append(f"-m {proto} --dport {ipt_value('port', rule.dport)}")
        elif rule.dports is not None:
            lo, hi = rule.dports
            parts.append(f"-m {proto} --dport {ipt_value('port', lo)}:{ipt_value('port', hi)}")
    if rule.statistic is not None:
        stat = rule.statistic
        if stat.every is not None:
            every = ipt_value("count", stat.every)
            parts.append(f"-m statistic --mode nth --every {every} --packet 0")
        else:
            probability = ipt_value("probability", stat.probability)
            parts.append(f"-m statistic --mode random --probability {probability}")
    parts.append(_target(rule.target, proto))
    return " ".join(parts)


def render_restore_text(writes: Iterable[Chain], deletes: Iterable[tuple[str, str]] = ()) -> str:
    """The restore input that replaces ``writes`` and deletes ``deletes`` ((table, chain)).

    Tables nothing touches are left out; a chain is declared once even when
    it is both written and named for deletion (then it is only written).
    """
    written: dict[str, list[Chain]] = {t: [] for t in TABLES}
    for chain in writes:
        written[ipt_value("table", chain.table)].append(chain)
    names = {(c.table, c.name) for t in TABLES for c in written[t]}
    deleted: dict[str, list[str]] = {t: [] for t in TABLES}
    for table, name in deletes:
        if (table, name) not in names:
            deleted[ipt_value("table", table)].append(name)
    out: list[str] = []
    for table in TABLES:
        chains, gone = written[table], sorted(deleted[table])
        if not chains and not gone:
            continue
        out.append(f"*{table}")
        out += [f":{ipt_value('chain', c.name)} - [0:0]" for c in chains]
        out += [f":{ipt_value('chain', name)} - [0:0]" for name in gone]  # flush, then delete
        for chain in chains:
            out += [render_rule(chain.name, rule) for rule in chain.rules]
        out += [f"-X {name}" for name in gone]
        out.append("COMMIT")
    return "\n".join(out) + "\n" if out else ""
