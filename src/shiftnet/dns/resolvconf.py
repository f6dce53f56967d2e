"""The resolv.conf ``shiftnet dns resolv-conf NAMESPACE`` prints. Pure.

A pod of namespace ``ns`` searches ``ns.svc.<zone> svc.<zone> <zone>`` with
``ndots:5``, as kubelet configures pods, so ``http://foo`` reaches the
service ``foo`` of the pod's own namespace and ``foo.bar`` the one in ``bar``.
What a pod on a node actually gets (its dnsPolicy, dnsConfig, the node's own
resolver) is :mod:`shiftnet.sdn.podresolver`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from shiftnet.dns.names import dns_label

NDOTS = 5


def search_path(namespace: str, domain: str = "cluster.local") -> list[str]:
    """The search domains for a pod of ``namespace``, most specific first."""
    zone = domain.strip(".").lower()
    ns = dns_label(namespace).decode("ascii")
    return [f"{ns}.svc.{zone}", f"svc.{zone}", zone]


def render_resolv_conf(
    namespace: str,
    nameservers: Sequence[tuple[str, int]],
    domain: str = "cluster.local",
    ndots: int = NDOTS,
) -> str:
    """The resolv.conf text for a pod of ``namespace``.

    resolv.conf has no syntax for a port; when the cluster DNS listens on
    another port than 53 a comment says so (resolvers that read the
    ``SHIFTNET_DNS_SERVER`` variable can use it, see docs/dns.md).
    """
    lines = [f"search {' '.join(search_path(namespace, domain))}"]
    for host, port in nameservers:
        if port != 53:
            lines.append(f"# cluster DNS listens on port {port}: SHIFTNET_DNS_SERVER={host}:{port}")
        lines.append(f"nameserver {host}")
    lines.append(f"options ndots:{ndots}")
    return "\n".join(lines) + "\n"
