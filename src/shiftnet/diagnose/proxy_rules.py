"""Whether the kernel holds one Service port's rules, as the recorded proxy lays them out.

nftables: the table's JSON listing (``nft -j list table``): the key
``ClusterIP . proto . port`` in the live service map (the one the
``services`` chain's verdict map names), the chain its verdict goes to, and
for a shared ``spread-N`` chain the N endpoint elements of that ClusterIP and
port; or the key in the no-endpoints map (the proxy rejects: no endpoint).
iptables: ``iptables-save`` of the nat table: a rule matching
``ClusterIP/32 proto dport port`` that jumps to the service port's own
``KUBE-SVC-``/``KUBE-SVL-`` chain, in a chain the services chain reaches, and
that chain holding rules; else a REJECT/DROP rule for it in the filter table.
Pure: each function reads text given to it and answers (found, missing).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from shiftnet.api.names import is_digits
from shiftnet.diagnose.proxy_record import ProxyRecord

PROTO_NUMBERS = {6: "tcp", 17: "udp"}


@dataclass(frozen=True)
class PortRules:
    port: int
    ok: bool
    text: str  # what was found, or what is missing


def _unwrap(key: object) -> object:
    """An element key or value, without nft's ``{"elem": {"val": ...}}`` wrapper."""
    while isinstance(key, dict) and "elem" in key:
        inner = key["elem"]
        key = inner.get("val") if isinstance(inner, dict) else inner
    return key


def _concat(value: object) -> tuple[object, ...]:
    value = _unwrap(value)
    if isinstance(value, dict) and isinstance(value.get("concat"), list):
        return tuple(PROTO_NUMBERS.get(v, v) if isinstance(v, int) else v for v in value["concat"])
    return (value,)


def _references(expr: object, out: set[str]) -> None:
    """Every ``@set`` a rule names."""
    if isinstance(expr, str) and expr.startswith("@"):
        out.add(expr[1:])
    elif isinstance(expr, dict):
        for v in expr.values():
            _references(v, out)
    elif isinstance(expr, list):
        for v in expr:
            _references(v, out)


@dataclass(frozen=True)
class NftTable:
    maps: dict[str, list[tuple[tuple[object, ...], object]]]  # name -> (key, value)
    chains: dict[str, int]  # name -> number of rules
    referenced: frozenset[str]  # sets and maps some rule names


def parse_nft_table(text: str) -> NftTable | None:
    """``nft -j list table`` output; None when it is not a listing."""
    try:
        items = json.loads(text)["nftables"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(items, list):
        return None
    maps: dict[str, list[tuple[tuple[object, ...], object]]] = {}
    chains: dict[str, int] = {}
    referenced: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("map"), dict):
            m = item["map"]
            elements = []
            for elem in m.get("elem") or ():
                if isinstance(elem, list) and len(elem) == 2:
                    elements.append((_concat(elem[0]), _unwrap(elem[1])))
            maps[str(m.get("name"))] = elements
        elif isinstance(item.get("chain"), dict):
            chains.setdefault(str(item["chain"].get("name")), 0)
        elif isinstance(item.get("rule"), dict):
            rule = item["rule"]
            name = str(rule.get("chain"))
            chains[name] = chains.get(name, 0) + 1
            _references(rule.get("expr"), referenced)
    return NftTable(maps, chains, frozenset(referenced))


def _live(table: NftTable, base: str, suffixes: tuple[str, ...]) -> str:
    """The map of ``base``'s names that a rule uses (else the one that exists, else base)."""
    names = [base + s for s in suffixes]
    for name in names:
        if name in table.referenced:
            return name
    return next((n for n in names if n in table.maps), base)


def _verdict_target(value: object) -> str:
    if isinstance(value, dict):
        for kind in ("goto", "jump"):
            target = value.get(kind)
            if isinstance(target, dict) and isinstance(target.get("target"), str):
                return str(target["target"])
    return ""


def nft_port_rules(
    table: NftTable, record: ProxyRecord, ip: str, proto: str, port: int
) -> PortRules:
    """One ClusterIP port in the recorded table (see the module docstring)."""
    key = (ip, proto, port)
    text = f"{ip} . {proto} . {port}"
    services = _live(table, record.service_map, record.map_suffixes)
    rejects = _live(table, record.no_endpoints_map, record.map_suffixes)
    verdict = next((v for k, v in table.maps.get(services, ()) if k == key), None)
    if verdict is None:
        if any(k == key for k, _ in table.maps.get(rejects, ())):
            return PortRules(port, True, f"{text} in map {rejects}: rejected, no ready endpoint")
        return PortRules(port, False, f"no element {text} in map {services} (nor in {rejects})")
    target = _verdict_target(verdict)
    if target not in table.chains:
        return PortRules(
            port, False, f"map {services} sends {text} to chain {target or '?'}, which is missing"
        )
    if table.chains[target] == 0:
        return PortRules(port, False, f"map {services} sends {text} to chain {target}: it is empty")
    spread = target.removeprefix("spread-")
    if spread != target and is_digits(spread):
        n = int(spread)
        emap = _live(table, record.endpoints_maps.get(proto, ""), record.map_suffixes)
        have = {k[2] for k, _ in table.maps.get(emap, ()) if k[:2] == (ip, port) and len(k) == 3}
        held = sum(1 for i in range(n) if i in have)
        if held < n:
            return PortRules(
                port,
                False,
                f"chain {target} picks among {n} endpoints but map {emap} holds {held} "
                f"for {ip} . {port}",
            )
        return PortRules(port, True, f"{text} goto {target} ({n} endpoint elements in {emap})")
    return PortRules(port, True, f"{text} goto {target} ({table.chains[target]} rules)")


@dataclass(frozen=True)
class SavedRule:
    chain: str
    destination: str
    protocol: str
    dport: str
    target: str


def parse_iptables_save(text: str) -> tuple[dict[str, int], list[SavedRule]]:
    """Chains (name -> number of rules) and rules of one ``iptables-save -t TABLE``."""
    chains: dict[str, int] = {}
    rules: list[SavedRule] = []
    for line in text.splitlines():
        if line.startswith(":"):
            chains.setdefault(line[1:].split()[0], 0)
        elif line.startswith("-A "):
            try:
                words = shlex.split(line)
            except ValueError:
                continue
            chain = words[1]
            chains[chain] = chains.get(chain, 0) + 1
            found = {"-d": "", "-p": "", "--dport": "", "-j": ""}
            for i, word in enumerate(words[:-1]):
                if word in found and not found[word]:
                    found[word] = words[i + 1]
            rules.append(SavedRule(chain, found["-d"], found["-p"], found["--dport"], found["-j"]))
    return chains, rules


def iptables_port_rules(
    nat: str,
    filter_text: str,
    record: ProxyRecord,
    ip: str,
    proto: str,
    port: int,
    own_chains: tuple[str, ...],
) -> PortRules:
    """One ClusterIP port in iptables-save text; ``own_chains``: its KUBE-SVC-/KUBE-SVL- names."""
    chains, rules = parse_iptables_save(nat)
    match = (f"{ip}/32", proto, str(port))
    text = f"{ip}/32 {proto} dport {port}"
    dispatch = [r for r in rules if (r.destination, r.protocol, r.dport) == match]
    own = [r for r in dispatch if r.target in own_chains]
    if not own:
        _, filter_rules = parse_iptables_save(filter_text)
        if any(
            (r.destination, r.protocol, r.dport) == match and r.target in ("REJECT", "DROP")
            for r in filter_rules
        ):
            return PortRules(port, True, f"the filter table rejects {text}: no ready endpoint")
        return PortRules(
            port,
            False,
            f"no {record.iptables_table} rule sends {text} to {' or '.join(own_chains)}",
        )
    rule = own[0]
    reached = rule.chain == record.services_chain or any(
        r.chain == record.services_chain and r.target == rule.chain for r in rules
    )
    if not reached:
        return PortRules(
            port,
            False,
            f"chain {rule.chain} sends {text} to {rule.target} but {record.services_chain} "
            f"does not jump to {rule.chain}",
        )
    if rule.target not in chains:
        return PortRules(port, False, f"chain {rule.target} (for {text}) is missing")
    if chains[rule.target] == 0:
        return PortRules(port, False, f"chain {rule.target} (for {text}) is empty")
    return PortRules(
        port,
        True,
        f"{text} -> {rule.chain} -> {rule.target} ({chains[rule.target]} rules)",
    )
