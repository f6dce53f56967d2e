"""What a pod's resolver reads: its resolv.conf and hosts file, as the kubelet makes them. Pure.

``dnsPolicy`` picks the base: ``ClusterFirst`` (the default) and
``ClusterFirstWithHostNet`` the cluster DNS with the search path
``<ns>.svc.<zone> svc.<zone> <zone>`` plus the node's own search domains and
``ndots:5``; ``Default`` the node's resolv.conf; ``None`` nothing. ``dnsConfig``
is then merged in: nameservers and searches appended without duplicates,
options by name (the pod's value wins). The result is cut to the resolver's
limits (3 nameservers, 32 search domains, 2048 characters), as the kubelet does.
shiftnet has no host-network pods, so ``ClusterFirstWithHostNet`` is
``ClusterFirst``.

glibc's resolv.conf has no port: a cluster DNS that does not listen on 53
cannot be a nameserver line, so ``ClusterFirst`` then keeps the node's
nameservers (a comment says where the cluster DNS is) and the cluster search
path. Without a cluster DNS at all it falls back to ``Default``, as the
kubelet does.

Every value passes one check before it is written (addresses through
``ipaddress``, names through :mod:`shiftnet.dns.names`, options as single
words); what fails is left out and reported in ``skipped``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from shiftnet.api import Pod
from shiftnet.api.core import DNS_DEFAULT, DNS_NONE
from shiftnet.dns.names import is_dns1123_label, is_dns1123_subdomain

NDOTS_OPTION = "ndots:5"
MAX_NAMESERVERS = 3
MAX_SEARCHES = 32
MAX_SEARCH_CHARS = 2048
HOSTNAME_MAX = 63
DNS_PORT = 53


@dataclass(frozen=True)
class ResolverConfig:
    """The three things resolv.conf says, plus comment lines and what was left out."""

    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    comments: tuple[str, ...] = ()
    skipped: tuple[str, ...] = field(default=(), compare=False)


def parse_resolv_conf(text: str) -> ResolverConfig:
    """The node's resolv.conf: ``nameserver``, ``search`` (or ``domain``), ``options``."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split(";", 1)[0].split()
        if len(words) < 2:
            continue
        key, rest = words[0], words[1:]
        if key == "nameserver":
            servers.append(rest[0])
        elif key in ("search", "domain"):
            searches = list(rest)  # the last search/domain line wins
        elif key == "options":
            options.extend(rest)
    return ResolverConfig(tuple(servers), tuple(searches), tuple(options))


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _merge_options(base: list[str], extra: list[tuple[str, str | None]]) -> list[str]:
    """By option name; the pod's value replaces the base's, order of first appearance."""
    merged: dict[str, str | None] = {}
    for opt in base:
        key, sep, text = opt.partition(":")
        merged[key] = text if sep else None
    for key, value in extra:
        merged[key] = value or None
    return [k if v is None else f"{k}:{v}" for k, v in merged.items()]


def cluster_search(namespace: str, domain: str) -> list[str]:
    zone = domain.strip(".").lower()
    return [f"{namespace}.svc.{zone}", f"svc.{zone}", zone]


def _checked(
    servers: list[str], searches: list[str], options: list[str]
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Keep only values that are what they claim to be; name the rest."""
    skipped: list[str] = []
    ok_servers = []
    for s in servers:
        try:
            ok_servers.append(str(ipaddress.ip_address(s)))
        except ValueError:
            skipped.append(f"nameserver {s!r}")
    ok_searches = []
    for s in searches:
        name = s.removesuffix(".").lower()
        if name and is_dns1123_subdomain(name):
            ok_searches.append(name)
        else:
            skipped.append(f"search {s!r}")
    ok_options = []
    for o in options:
        if o and all(c.isprintable() and not c.isspace() and c not in "#;" for c in o):
            ok_options.append(o)
        else:
            skipped.append(f"option {o!r}")
    return ok_servers, ok_searches, ok_options, skipped


def _fit(servers: list[str], searches: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Cut to the resolver's limits, as the kubelet does, saying what was cut."""
    cut: list[str] = []
    if len(servers) > MAX_NAMESERVERS:
        cut += [f"nameserver {s!r} (limit {MAX_NAMESERVERS})" for s in servers[MAX_NAMESERVERS:]]
        servers = servers[:MAX_NAMESERVERS]
    if len(searches) > MAX_SEARCHES:
        cut += [f"search {s!r} (limit {MAX_SEARCHES})" for s in searches[MAX_SEARCHES:]]
        searches = searches[:MAX_SEARCHES]
    while searches and len(" ".join(searches)) > MAX_SEARCH_CHARS:
        cut.append(f"search {searches[-1]!r} (limit {MAX_SEARCH_CHARS} characters)")
        searches = searches[:-1]
    return servers, searches, cut


def pod_resolver(
    pod: Pod,
    *,
    node: ResolverConfig,
    cluster_dns: tuple[str, int] | None,
    domain: str = "cluster.local",
) -> ResolverConfig:
    """The resolver configuration ``pod`` gets on a node whose own is ``node``."""
    policy = pod.spec.effective_dns_policy
    namespace = pod.metadata.namespace or "default"
    comments: list[str] = []
    if policy == DNS_NONE:
        servers: list[str] = []
        searches: list[str] = []
        options: list[str] = []
    elif policy == DNS_DEFAULT or cluster_dns is None:
        servers, searches, options = list(node.nameservers), list(node.searches), list(node.options)
    else:
        host, port = cluster_dns
        if port == DNS_PORT:
            servers = [host]
        else:
            servers = list(node.nameservers)
            comments.append(
                f"cluster DNS listens on {host} port {port}, which resolv.conf cannot name: "
                f"SHIFTNET_DNS_SERVER={_hostport(host, port)}"
            )
        searches = _unique(cluster_search(namespace, domain) + list(node.searches))
        options = [NDOTS_OPTION]
    cfg = pod.spec.dns_config
    if cfg is not None:
        servers = _unique(servers + list(cfg.nameservers))
        searches = _unique(searches + [s.removesuffix(".") for s in cfg.searches])
        options = _merge_options(options, [(o.name, o.value) for o in cfg.options if o.name])
    servers, searches, options, skipped = _checked(servers, searches, options)
    servers, searches, cut = _fit(_unique(servers), _unique(searches))
    return ResolverConfig(
        tuple(servers), tuple(searches), tuple(options), tuple(comments), tuple(skipped + cut)
    )


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def render_resolv_conf(cfg: ResolverConfig) -> str:
    lines = [f"# {c}" for c in cfg.comments]
    if cfg.searches:
        lines.append("search " + " ".join(cfg.searches))
    lines += [f"nameserver {s}" for s in cfg.nameservers]
    if cfg.options:
        lines.append("options " + " ".join(cfg.options))
    return "\n".join(lines) + "\n"


def pod_hostname(pod: Pod) -> tuple[str, str | None]:
    """(hostname, FQDN or None): ``spec.hostname`` or the pod name cut to 63 characters;
    with ``spec.subdomain`` the FQDN ``<hostname>.<subdomain>.<ns>.svc.<zone>`` (zone
    added by the caller)."""
    hostname = pod.spec.hostname or pod.metadata.name[:HOSTNAME_MAX].rstrip("-.")
    if not is_dns1123_label(hostname):
        hostname = "localhost"  # never reached for a pod the API accepted
    sub = pod.spec.subdomain
    if sub and is_dns1123_label(sub):
        namespace = pod.metadata.namespace or "default"
        return hostname, f"{hostname}.{sub}.{namespace}.svc"
    return hostname, None


def render_hosts(pod: Pod, pod_ips: list[str], domain: str = "cluster.local") -> str:
    """The pod's /etc/hosts: localhost lines, the pod's own line (its FQDN first when it
    has a subdomain), then ``hostAliases``; a value that is not what it claims is left out."""
    hostname, fqdn = pod_hostname(pod)
    lines = [
        "# Kubernetes-managed hosts file (written by the shiftnet node agent).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    names = [f"{fqdn}.{domain.strip('.').lower()}", hostname] if fqdn else [hostname]
    for ip in pod_ips:
        if _is_ip(ip):
            lines.append(f"{ip}\t" + "\t".join(names))
    aliases = [
        (a.ip, [h for h in a.hostnames if is_dns1123_subdomain(h)])
        for a in pod.spec.host_aliases or []
        if _is_ip(a.ip)
    ]
    if aliases:
        lines += ["", "# Entries added by HostAliases."]
        lines += [f"{ip}\t" + "\t".join(hosts) for ip, hosts in aliases if hosts]
    return "\n".join(lines) + "\n"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return "%" not in text


def resolver_environment(cfg: ResolverConfig, hostname: str) -> dict[str, str]:
    """Variables glibc reads (``LOCALDOMAIN``, ``RES_OPTIONS``) kept equal to the file,
    so the search path and options hold even where the pod's own files cannot be put
    in place; ``HOSTNAME`` is the pod's hostname."""
    env = {"HOSTNAME": hostname}
    if cfg.searches:
        env["LOCALDOMAIN"] = " ".join(cfg.searches)
    if cfg.options:
        env["RES_OPTIONS"] = " ".join(cfg.options)
    return env
