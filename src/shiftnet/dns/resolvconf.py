"""What a pod's resolver is told: search path, nameserver, ndots. Pure.

A pod of namespace ``ns`` searches ``ns.svc.<zone> svc.<zone> <zone>`` with
``ndots:5``, as kubelet configures pods, so ``http://foo`` reaches the
service ``foo`` of the pod's own namespace and ``foo.bar`` the one in ``bar``.
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


def pod_environment(
    namespace: str,
    nameserver: tuple[str, int],
    domain: str = "cluster.local",
    resolv_conf_path: str | None = None,
) -> dict[str, str]:
    """Environment for a local-mode pod process (no mount namespace, no own resolv.conf).

    glibc reads ``LOCALDOMAIN`` (the search list) and ``RES_OPTIONS`` (ndots)
    from the environment; the server's address and the generated resolv.conf
    are handed over for resolvers that can be pointed at them.
    """
    env = {
        "LOCALDOMAIN": " ".join(search_path(namespace, domain)),
        "RES_OPTIONS": f"ndots:{NDOTS}",
        "SHIFTNET_DNS_SERVER": f"{_host(nameserver[0])}:{nameserver[1]}",
    }
    if resolv_conf_path:
        env["SHIFTNET_RESOLV_CONF"] = resolv_conf_path
    return env


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def resolv_conf_path(state_dir: str, namespace: str) -> str:
    """Where the node agent keeps the resolv.conf of a namespace's pods (local mode)."""
    return f"{state_dir.rstrip('/')}/dns/{dns_label(namespace).decode('ascii')}.resolv.conf"


def write_pod_resolv_conf(
    state_dir: str,
    namespace: str,
    nameserver: tuple[str, int],
    domain: str = "cluster.local",
) -> dict[str, str]:
    """Write the namespace's resolv.conf (atomically, only when it changed) and return the
    environment a local-mode pod process of that namespace should get."""
    import os

    path = resolv_conf_path(state_dir, namespace)
    text = render_resolv_conf(namespace, [nameserver], domain)
    try:
        with open(path, encoding="ascii") as f:
            current: str | None = f.read()
    except OSError:
        current = None
    if current != text:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(text)
        os.replace(tmp, path)
    return pod_environment(namespace, nameserver, domain, resolv_conf_path=path)
