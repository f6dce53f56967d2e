"""Render the service table as an nftables ruleset in its own table (pure).

Layout (one ``ip`` table, default ``shiftnet-proxy``), chosen so that the
number of kernel objects does not grow with the number of services:

* map ``service-ips``: ``ip daddr . meta l4proto . th dport`` -> verdict, so
  finding a service is one hash lookup whatever the number of services;
* map ``service-endpoints``: ``vip . proto . port . index`` -> ``endpoint . port``;
  a shared chain ``spread-N`` (one per endpoint count N) does
  ``dnat to ip daddr . meta l4proto . th dport . numgen random mod N map @service-endpoints``;
* map ``no-endpoint-services``: the same key -> ``goto reject-service`` for
  services with no ready endpoint (filter hooks, before NAT);
* ClientIP affinity services get their own ``svc-<hash>`` chain: lookups in
  per-endpoint dynamic sets with a timeout (``ip saddr @aff-<hash> goto
  sep-<hash>``), then a ``numgen`` cascade; each ``sep-<hash>`` chain updates
  its set and DNATs;
* ``mark-for-masquerade`` + ``postrouting``: masquerade marked packets.

Why not one chain per endpoint with an anonymous ``numgen ... vmap``: each
anonymous set costs the kernel a scan of all sets of the table when it is
named, so 10,000 of them take minutes to load (measured, docs/proxy.md).

Each service is described by :class:`NftService`. A full sync either writes
the whole table in one transaction that first deletes it (:func:`render_full`,
the fallback), or flips between two sets of map names (:func:`render_prepare`,
elements over netlink by ``nftnl``, :func:`render_swap`) so that libnftables
never parses the ~110,000 elements; an update diffs the old and new
descriptions of only the changed services and writes the minimal element,
chain and set commands, again as one transaction.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from shiftnet.errors import InvalidInput
from shiftnet.proxy.model import (
    NODE_PORT_ADDRESS,
    Backend,
    ServiceEntry,
    ServiceTable,
    TableDiff,
    canonical_ipv4,
)
from shiftnet.proxy.names import affinity_hash, endpoint_hash, name_hash, service_hash

MASQ_MARK = 0x4000
SERVICE_MAP = "service-ips"
ENDPOINTS_MAPS = {"tcp": "endpoints-tcp", "udp": "endpoints-udp"}
NO_ENDPOINTS_MAP = "no-endpoint-services"
NODE_PORTS_MAP = "node-ports"  # proto . nodePort : goto ext-<hash>; never flipped (small)
NODE_PORTS_TYPE = "type inet_proto . inet_service : verdict"
SPREADS = ("random", "roundrobin")
MAP_SUFFIXES = ("", "-b")
VERDICT_MAPS = (SERVICE_MAP, NO_ENDPOINTS_MAP)

_COMMENT_RE = re.compile(r"^[A-Za-z0-9._/:-]{1,128}$")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")


def nft_value(kind: str, value: object) -> str:
    """The one gate for values rendered into nft syntax: validates and formats.

    kinds: ``ipv4``, ``cidr``, ``port``, ``proto``, ``timeout``, ``comment``
    (rendered quoted), ``name`` (a table name from configuration).
    """
    if kind == "ipv4":  # hot path: 110,000 calls for 10,000 services
        ip = canonical_ipv4(value) if type(value) is str else None
        if ip is None:
            raise InvalidInput(f"nftables: {value!r} is not an IPv4 address")
        return ip
    if kind == "port" and type(value) is int and 0 < value < 65536:
        return str(value)
    text = str(value)
    if kind == "cidr":
        try:
            return str(ipaddress.IPv4Network(text, strict=False))
        except ValueError:
            raise InvalidInput(f"nftables: {text!r} is not an IPv4 CIDR") from None
    if kind == "port":
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536:
            return str(value)
        raise InvalidInput(f"nftables: {text!r} is not a port number")
    if kind == "proto":
        if text.upper() in ("TCP", "UDP"):
            return text.lower()
        raise InvalidInput(f"nftables: {text!r} is not tcp or udp")
    if kind == "timeout":
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return f"{value}s"
        raise InvalidInput(f"nftables: {text!r} is not a positive number of seconds")
    if kind == "comment":
        if _COMMENT_RE.match(text):
            return f'"{text}"'
        raise InvalidInput(f"nftables: comment {text!r} has characters outside [A-Za-z0-9._/:-]")
    if kind == "name":
        if _NAME_RE.match(text):
            return text
        raise InvalidInput(f"nftables: {text!r} is not a valid table name")
    raise InvalidInput(f"nftables: unknown value kind {kind!r}")


@dataclass(frozen=True)
class NftConfig:
    table: str = "shiftnet-proxy"
    spread: str = "random"  # or "roundrobin" (numgen inc)
    cluster_cidr: str | None = None  # mark for masquerade traffic from outside it
    masquerade_all: bool = False
    maps_suffix: str = ""  # "" or "-b": which of the two map sets is live (see render_swap)

    def __post_init__(self) -> None:
        nft_value("name", self.table)
        if self.maps_suffix not in MAP_SUFFIXES:
            raise InvalidInput(f"nftables: maps suffix {self.maps_suffix!r} is not '' or '-b'")
        if self.spread not in SPREADS:
            raise InvalidInput(
                f"nftables: spread {self.spread!r} is not one of {', '.join(SPREADS)}"
            )
        if self.cluster_cidr is not None:
            nft_value("cidr", self.cluster_cidr)


@dataclass(frozen=True)
class NftService:
    """Everything one service port owns in the table."""

    element_map: str
    element: str  # "key : verdict"
    endpoint_map: str = ""  # endpoints-tcp or endpoints-udp
    endpoint_elements: tuple[str, ...] = ()  # "vip . port . i : ip . port"
    chains: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> rules
    sets: dict[str, str] = field(default_factory=dict)  # name -> body
    spread: int = 0  # N of the shared spread-N chain it uses (0: none)
    # external addresses: (map, "key : verdict") in service-ips, no-endpoint-services
    # or node-ports
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def element_key(self) -> str:
        return self.element.split(" : ", 1)[0]


def _key(entry: ServiceEntry) -> str:
    ip = nft_value("ipv4", entry.cluster_ip)
    return f"{ip} . {nft_value('proto', entry.protocol)} . {nft_value('port', entry.port)}"


def _masquerade_rule(config: NftConfig) -> list[str]:
    if config.masquerade_all:
        return ["jump mark-for-masquerade"]
    if config.cluster_cidr:
        return [f"ip saddr != {nft_value('cidr', config.cluster_cidr)} jump mark-for-masquerade"]
    return []


def map_name(base: str, config: NftConfig) -> str:
    """The live name of one of the four maps (the suffix flips on every fast full sync)."""
    return base + config.maps_suffix


def all_map_names(config: NftConfig) -> list[str]:
    bases = [SERVICE_MAP, NO_ENDPOINTS_MAP, *sorted(ENDPOINTS_MAPS.values())]
    return [map_name(b, config) for b in bases]


def _dnat_by_index(gen: str, n: int, config: NftConfig) -> list[str]:
    return [
        f"meta l4proto {p} dnat ip to ip daddr . {p} dport . numgen {gen} mod {n} "
        f"map @{map_name(m, config)}"
        for p, m in sorted(ENDPOINTS_MAPS.items())
    ]


def spread_chain(n: int, config: NftConfig) -> tuple[str, tuple[str, ...]]:
    """The shared chain for every non-affinity service with ``n`` endpoints."""
    return f"spread-{n}", tuple(_masquerade_rule(config) + _dnat_by_index("random", n, config))


def describe(entry: ServiceEntry, config: NftConfig) -> NftService:
    """The map elements, chains and sets of one service port."""
    cluster = _describe_cluster(entry, config)
    if not entry.external_vips:
        return cluster
    return _with_external(cluster, entry, config)


def _describe_cluster(entry: ServiceEntry, config: NftConfig) -> NftService:
    """What traffic to the ClusterIP needs (to ``entry.cluster_backends``)."""
    key = _key(entry)
    backends = entry.cluster_backends
    if not backends:
        return NftService(map_name(NO_ENDPOINTS_MAP, config), f"{key} : goto reject-service")
    n = len(backends)
    if not entry.affinity:  # the hot path: 100,000 endpoints at 10,000 services
        proto = nft_value("proto", entry.protocol)
        vip = f"{nft_value('ipv4', entry.cluster_ip)} . {nft_value('port', entry.port)}"
        emap = map_name(ENDPOINTS_MAPS[proto], config)
        elements = tuple(
            [
                f"{vip} . {i} : {nft_value('ipv4', ip)} . {nft_value('port', port)}"
                for i, (ip, port) in enumerate(backends)
            ]
        )
        if config.spread == "random":
            element = f"{key} : goto spread-{n}"
            return NftService(map_name(SERVICE_MAP, config), element, emap, elements, spread=n)
        comment = f"comment {nft_value('comment', str(entry.id))}"
        svc = f"svc-{service_hash(entry)}"
        rules = (comment, *_masquerade_rule(config), *_dnat_by_index("inc", n, config))
        smap = map_name(SERVICE_MAP, config)
        return NftService(smap, f"{key} : goto {svc}", emap, elements, {svc: rules})
    comment = f"comment {nft_value('comment', str(entry.id))}"
    svc = f"svc-{service_hash(entry)}"
    chains: dict[str, tuple[str, ...]] = {}
    sets: dict[str, str] = {}
    sticky = _sticky_rules(entry, backends, config, chains, sets)
    chains[svc] = (comment, *_masquerade_rule(config), *sticky)
    return NftService(map_name(SERVICE_MAP, config), f"{key} : goto {svc}", "", (), chains, sets)


def _sticky_rules(
    entry: ServiceEntry,
    backends: Sequence[Backend],
    config: NftConfig,
    chains: dict[str, tuple[str, ...]],
    sets: dict[str, str],
) -> list[str]:
    """ClientIP affinity over ``backends``: a client seen within the timeout goes to its
    endpoint's ``sep-`` chain, others down a numgen cascade. Adds the ``sep-`` chains
    and ``aff-`` sets (shared by cluster and external traffic) to ``chains``/``sets``."""
    timeout = nft_value("timeout", entry.affinity_timeout)
    proto = nft_value("proto", entry.protocol)
    rules: list[str] = []
    seps: list[str] = []
    for backend in backends:
        target = f"{nft_value('ipv4', backend.ip)}:{nft_value('port', backend.port)}"
        sep = f"sep-{endpoint_hash(entry, backend)}"
        aff = f"aff-{affinity_hash(entry, backend)}"
        seps.append(sep)
        sets[aff] = f"type ipv4_addr; flags dynamic,timeout; timeout {timeout};"
        rules.append(f"ip saddr @{aff} goto {sep}")
        chains[sep] = (
            f"update @{aff} {{ ip saddr }}",
            f"meta l4proto {proto} dnat ip to {target}",
        )
    return rules + _cascade([f"goto {sep}" for sep in seps], config)


def _cascade(verdicts: Sequence[str], config: NftConfig) -> list[str]:
    """Pick one of ``verdicts`` evenly: ``numgen mod (n-i) == 0`` for each but the last."""
    gen = "inc" if config.spread == "roundrobin" else "random"
    n = len(verdicts)
    rules = [f"numgen {gen} mod {n - i} == 0 {v}" for i, v in enumerate(verdicts[:-1])]
    return [*rules, verdicts[-1]]


def _with_external(cluster: NftService, entry: ServiceEntry, config: NftConfig) -> NftService:
    """``cluster`` plus the node port, external IPs and LB addresses of ``entry``.

    They all lead to one ``ext-<hash>`` chain. With ``externalTrafficPolicy:
    Cluster`` it marks the packet for masquerade and, when external traffic goes
    where cluster traffic goes, rewrites the destination to the ClusterIP:port
    and continues in the cluster chain (so the endpoint elements are shared, and
    the reply is un-NATed to the address the client used, from conntrack's
    original tuple). Otherwise (``Local``, which keeps the client's address and
    uses this node's endpoints only) it picks among ``external_backends`` itself;
    traffic from the node itself (and from ``cluster_cidr``) still goes the
    cluster way, as kube-proxy does.
    """
    backends = entry.external_backends
    proto = nft_value("proto", entry.protocol)
    ext = f"ext-{name_hash('external', str(entry.id))}"
    extra: list[tuple[str, str]] = []
    for ip, _, port in entry.external_vips:
        if ip == NODE_PORT_ADDRESS:
            if backends:  # none: nothing is DNATed, the host refuses the port itself
                extra.append((NODE_PORTS_MAP, f"{proto} . {nft_value('port', port)} : goto {ext}"))
            continue
        key = f"{nft_value('ipv4', ip)} . {proto} . {nft_value('port', port)}"
        if backends:
            extra.append((map_name(SERVICE_MAP, config), f"{key} : goto {ext}"))
        else:
            extra.append((map_name(NO_ENDPOINTS_MAP, config), f"{key} : goto reject-service"))
    if not backends:
        return dataclasses.replace(cluster, extra=tuple(extra))
    chains = dict(cluster.chains)
    sets = dict(cluster.sets)
    rules = [f"comment {nft_value('comment', str(entry.id))}"]
    to_cluster = _to_cluster(entry, cluster)
    if not entry.external_local:
        rules.append("jump mark-for-masquerade")
    elif to_cluster:  # as kube-proxy: pods and the node itself are served cluster-wide
        if config.cluster_cidr:
            rules.append(f"ip saddr {nft_value('cidr', config.cluster_cidr)} {to_cluster}")
        rules += [
            "fib saddr type local jump mark-for-masquerade",
            f"fib saddr type local {to_cluster}",
        ]
    if not entry.external_local and backends == entry.cluster_backends and to_cluster:
        rules.append(to_cluster)
    elif entry.affinity:
        rules += _sticky_rules(entry, backends, config, chains, sets)
    else:
        targets = [
            f"meta l4proto {proto} dnat ip to {nft_value('ipv4', b.ip)}:{nft_value('port', b.port)}"
            for b in backends
        ]
        rules += _cascade(targets, config)
    chains[ext] = tuple(rules)
    return dataclasses.replace(cluster, chains=chains, sets=sets, extra=tuple(extra))


def _to_cluster(entry: ServiceEntry, cluster: NftService) -> str:
    """The statement that sends a packet on as if it were to the ClusterIP:port (the
    cluster chain's dispatch; see :func:`_with_external`); "" when that has no endpoint."""
    if cluster.element.endswith("reject-service"):
        return ""
    target = f"spread-{cluster.spread}" if cluster.spread else cluster.element.split()[-1]
    vip, vport = nft_value("ipv4", entry.cluster_ip), nft_value("port", entry.port)
    return f"ip daddr set {vip} th dport set {vport} goto {target}"


def _base(config: NftConfig) -> list[str]:
    mark = f"0x{MASQ_MARK:x}"
    key = "ip daddr . meta l4proto . th dport"
    no_endpoints, services = map_name(NO_ENDPOINTS_MAP, config), map_name(SERVICE_MAP, config)
    return [
        "\tchain prerouting {",
        "\t\ttype nat hook prerouting priority -100; policy accept;",
        "\t\tjump services",
        "\t}",
        "\tchain output {",
        "\t\ttype nat hook output priority -100; policy accept;",
        "\t\tjump services",
        "\t}",
        "\tchain postrouting {",
        "\t\ttype nat hook postrouting priority 100; policy accept;",
        f"\t\tmeta mark & {mark} == 0 return",
        f"\t\tmeta mark set meta mark ^ {mark}",
        "\t\tmasquerade fully-random",
        "\t}",
        "\tchain filter-forward {",
        "\t\ttype filter hook forward priority -110; policy accept;",
        f"\t\tct state new {key} vmap @{no_endpoints}",
        "\t}",
        "\tchain filter-output {",
        "\t\ttype filter hook output priority -110; policy accept;",
        f"\t\tct state new {key} vmap @{no_endpoints}",
        "\t}",
        "\tchain services {",
        f"\t\t{key} vmap @{services}",
        f"\t\tfib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport "
        f"vmap @{NODE_PORTS_MAP}",
        "\t}",
        "\tchain mark-for-masquerade {",
        f"\t\tmeta mark set meta mark | {mark}",
        "\t}",
        "\tchain reject-service {",
        "\t\treject",
        "\t}",
    ]


def _map(name: str, head: str, elements: Sequence[str]) -> list[str]:
    lines = [f"\tmap {name} {{", f"\t\t{head}"]
    if elements:
        lines.append("\t\telements = { " + ",\n\t\t\t".join(elements) + " }")
    lines.append("\t}")
    return lines


def _chain(name: str, rules: Iterable[str]) -> list[str]:
    return [f"\tchain {name} {{", *(f"\t\t{rule}" for rule in rules), "\t}"]


VERDICT_MAP = "type ipv4_addr . inet_proto . inet_service : verdict"


def _endpoints_type(proto: str) -> str:
    return f"typeof ip daddr . {proto} dport . numgen random mod 1 : ip daddr . {proto} dport"


def _map_heads(config: NftConfig) -> list[tuple[str, str]]:
    heads = [(SERVICE_MAP, VERDICT_MAP), (NO_ENDPOINTS_MAP, VERDICT_MAP)]
    heads += [(m, _endpoints_type(p)) for p, m in sorted(ENDPOINTS_MAPS.items())]
    return [(map_name(m, config), head) for m, head in heads]


def map_elements(described: Sequence[NftService]) -> dict[str, list[str]]:
    """Map name -> its elements, in service order."""
    out: dict[str, list[str]] = {}
    for d in described:
        if d.element:
            out.setdefault(d.element_map, []).append(d.element)
        if d.endpoint_elements:
            out.setdefault(d.endpoint_map, []).extend(d.endpoint_elements)
        for mname, element in d.extra:
            if mname != NODE_PORTS_MAP:  # written as text (see node_port_elements)
                out.setdefault(mname, []).append(element)
    return out


def node_port_elements(described: Sequence[NftService]) -> list[str]:
    """The node-ports map's elements: at most one a port of the node port range, so
    text is cheap enough and the map is not part of the flip."""
    return [e for d in described for m, e in d.extra if m == NODE_PORTS_MAP]


def render_full(table: ServiceTable, config: NftConfig) -> str:
    """The whole table, replacing any previous one in the same transaction."""
    name = nft_value("name", config.table)
    described = [describe(e, config) for e in table.sorted_entries()]
    out = [f"add table ip {name}", f"delete table ip {name}", f"table ip {name} {{"]
    elements = map_elements(described)
    for mname, head in _map_heads(config):
        out += _map(mname, head, elements.get(mname, []))
    out += _map(NODE_PORTS_MAP, NODE_PORTS_TYPE, node_port_elements(described))
    out += _table_body(described, config)
    out.append("}")
    return "\n".join(out) + "\n"


def describe_all(table: ServiceTable, config: NftConfig) -> list[NftService]:
    return [describe(e, config) for e in table.sorted_entries()]


def render_prepare(
    described: Sequence[NftService], config: NftConfig, existing_sets: Iterable[str]
) -> str:
    """First step of a fast full sync: empty maps under the *standby* names.

    ``config.maps_suffix`` names the standby maps; no rule references them yet, so
    filling them (in as many transactions as needed, see ``nftnl``) changes no
    traffic. Leftovers of an earlier attempt are dropped first. Every chain a map
    verdict may name is created (empty, or kept as it is) so the elements can refer
    to it; ``render_swap`` then gives the chains their rules.
    """
    t = f"ip {nft_value('name', config.table)}"
    out = [f"add table {t}"]
    present = set(existing_sets)
    for mname, head in _map_heads(config):
        if mname in present:
            out.append(f"delete map {t} {mname}")
        out.append(f"add map {t} {mname} {{ {head}; }}")
    out.append(f"add map {t} {NODE_PORTS_MAP} {{ {NODE_PORTS_TYPE}; }}")
    for chain in _chain_names(described, config):
        out.append(f"add chain {t} {chain}")
    return "\n".join(out) + "\n"


def _chain_names(described: Sequence[NftService], config: NftConfig) -> list[str]:
    names = {"reject-service"} | {f"spread-{d.spread}" for d in described if d.spread}
    names |= {c for d in described for c in d.chains}
    return sorted(names)


def render_swap(
    described: Sequence[NftService],
    config: NftConfig,
    existing_chains: Iterable[str],
    existing_sets: Iterable[str],
) -> str:
    """Last step of a fast full sync, one small transaction: point every rule at the
    freshly filled maps and remove everything else, so traffic sees the old table
    or the new one, never a mix (the same guarantee as ``render_full``'s delete and
    re-create, without parsing the elements)."""
    name = nft_value("name", config.table)
    t = f"ip {name}"
    keep_sets = set(all_map_names(config)) | {s for d in described for s in d.sets}
    keep_sets.add(NODE_PORTS_MAP)
    base = [line.strip() for line in _base(config) if line.startswith("\tchain ")]
    keep_chains = set(_chain_names(described, config)) | {b.split()[1] for b in base}
    out = [f"flush table {t}"]  # every rule goes; the maps and sets are objects, they stay
    out.append(f"flush map {t} {NODE_PORTS_MAP}")  # before its chains may be deleted
    ours = {b + sfx for b in _MAP_BASES for sfx in MAP_SUFFIXES}
    stale = sorted(s for s in set(existing_sets) - keep_sets if not s.startswith("__"))
    out += [f"delete {'map' if s in ours else 'set'} {t} {s}" for s in stale]
    out += [f"delete chain {t} {c}" for c in sorted(set(existing_chains) - keep_chains)]
    out.append(f"table {t} {{")
    out += _table_body(described, config)
    out.append("}")
    node_ports = node_port_elements(described)
    if node_ports:
        out.append(f"add element {t} {NODE_PORTS_MAP} {{ {', '.join(node_ports)} }}")
    return "\n".join(out) + "\n"


_MAP_BASES = (SERVICE_MAP, NO_ENDPOINTS_MAP, *ENDPOINTS_MAPS.values())


def render_update(
    changes: Iterable[tuple[NftService | None, NftService | None]], config: NftConfig
) -> str:
    """Commands turning each old description into its new one, as one transaction.

    Phases run across all services so that one service may take over a key or
    name another gives up: delete elements, flush changed chains, delete stale
    chains and sets, add sets and chains, add rules, add elements.
    """
    t = f"ip {nft_value('name', config.table)}"
    pairs = list(changes)
    empty = NftService("", "")
    phases: list[list[str]] = [[] for _ in range(7)]
    spreads: set[int] = set()
    for old_d, new_d in pairs:
        old = old_d or empty
        new = new_d or empty
        if old.element and (old.element != new.element or old.element_map != new.element_map):
            phases[0].append(f"delete element {t} {old.element_map} {{ {old.element_key} }}")
        for mname, element in sorted(set(old.extra) - set(new.extra)):
            key = element.split(" : ", 1)[0]
            phases[0].append(f"delete element {t} {mname} {{ {key} }}")
        for mname, element in sorted(set(new.extra) - set(old.extra)):
            phases[6].append(f"add element {t} {mname} {{ {element} }}")
        same_map = old.endpoint_map == new.endpoint_map
        kept = set(new.endpoint_elements) if same_map else set()
        stale = sorted(set(old.endpoint_elements) - kept)
        if stale:
            keys = ", ".join(e.split(" : ", 1)[0] for e in stale)
            phases[0].append(f"delete element {t} {old.endpoint_map} {{ {keys} }}")
        had = set(old.endpoint_elements) if same_map else set()
        fresh = sorted(set(new.endpoint_elements) - had)
        if fresh:
            phases[6].append(f"add element {t} {new.endpoint_map} {{ {', '.join(fresh)} }}")
        if new.spread and new.spread != old.spread:
            spreads.add(new.spread)
        for chain, rules in sorted(old.chains.items()):
            if new.chains.get(chain) != rules:
                phases[1].append(f"flush chain {t} {chain}")
            if chain not in new.chains:
                phases[2].append(f"delete chain {t} {chain}")
        for set_name in sorted(old.sets.keys() - new.sets.keys()):
            phases[3].append(f"delete set {t} {set_name}")
        for set_name in sorted(new.sets.keys() - old.sets.keys()):
            phases[4].append(f"add set {t} {set_name} {{ {new.sets[set_name]} }}")
        for chain, rules in sorted(new.chains.items()):
            if old.chains.get(chain) == rules:
                continue
            if chain not in old.chains:
                comment = next((r for r in rules if r.startswith("comment ")), None)
                body = f" {{ {comment}; }}" if comment else ""
                phases[4].append(f"add chain {t} {chain}{body}")
            for rule in rules:
                if rule.startswith("comment "):
                    continue  # a chain comment is set when the chain is added
                phases[5].append(f"add rule {t} {chain} {rule}")
        if new.element and (old.element != new.element or old.element_map != new.element_map):
            phases[6].append(f"add element {t} {new.element_map} {{ {new.element} }}")
    for n in sorted(spreads):  # shared chains: (re)written idempotently, never deleted here
        chain, rules = spread_chain(n, config)
        phases[4] += [f"add chain {t} {chain}", f"flush chain {t} {chain}"]
        phases[5] += [f"add rule {t} {chain} {rule}" for rule in rules]
    return "".join(line + "\n" for phase in phases for line in phase)


def update_pairs(
    diff: TableDiff, config: NftConfig
) -> list[tuple[NftService | None, NftService | None]]:
    """(old, new) descriptions for every service port the diff touches."""
    pairs: list[tuple[NftService | None, NftService | None]] = []
    pairs += [(describe(e, config), None) for e in diff.removed]
    pairs += [(describe(o, config), describe(n, config)) for o, n in diff.changed]
    pairs += [(None, describe(e, config)) for e in diff.added]
    return pairs


def _table_body(described: Sequence[NftService], config: NftConfig) -> list[str]:
    """Sets, base chains, spread chains and service chains: what a full and a partial sync share."""
    out: list[str] = []
    for d in described:
        for set_name, body in sorted(d.sets.items()):
            out.append(f"\tset {set_name} {{ {body} }}")
    out += _base(config)
    for n in sorted({d.spread for d in described if d.spread}):
        out += _chain(*spread_chain(n, config))
    for d in described:
        for chain, rules in sorted(d.chains.items()):
            out += _chain(chain, rules)
    return out
