"""Gather the facts of ``diagnose service`` from their sources.

The store gives the Service, its Endpoints and pods; the running proxy's
record its mode and namespace, and there the kernel its listening sockets
(user-space) or its rules (``proxy_view``: read only); the cluster DNS named
in the state directory's claims (or ``--dns``) the answer for the name; a
real connection, made from the proxy's network namespace, what a client of
the proxy meets.
"""

from __future__ import annotations

import json
from pathlib import Path

from shiftnet.api import Endpoints, Service
from shiftnet.api.names import is_digits
from shiftnet.client import Client
from shiftnet.diagnose import probes
from shiftnet.diagnose.gather_route import pod_views
from shiftnet.diagnose.proxy_view import ProxyView, proxy_view
from shiftnet.diagnose.service_checks import ServiceFacts
from shiftnet.errors import InvalidInput, shorten

CLAIMS_RECORD = "claims.json"  # the state directory's record of its ports (claims/registry.py)
CLUSTER_DOMAIN = "cluster.local"


def dns_server(state_dir: Path, given: str | None) -> tuple[str, int] | None:
    """``--dns ADDR:PORT``, else the port the state directory's cluster claimed for its DNS."""
    if given:
        host, sep, port = given.rpartition(":")
        if not sep or not is_digits(port):
            raise InvalidInput(f"--dns {shorten(given)!r} is invalid: expected ADDR:PORT")
        return host.strip("[]") or "127.0.0.1", int(port)
    try:
        record = json.loads((state_dir / CLAIMS_RECORD).read_text())
        return "127.0.0.1", int(record["ports"]["dns"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


async def gather_service(
    client: Client, namespace: str, name: str, state_dir: Path, dns: str | None = None
) -> ServiceFacts:
    dns_name = f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}"
    server = dns_server(state_dir, dns)
    svc = await client.get(Service, namespace, name)  # a missing service: NotFound
    cluster_ip = svc.spec.cluster_ip or ""
    tcp = [p for p in svc.spec.ports if (p.protocol or "TCP").upper() == "TCP"]
    ports = tuple(p.port for p in tcp)
    selector = dict(svc.spec.selector or {})
    pods = []
    if selector:
        text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        pods = await pod_views(client, namespace, text)
    ready: list[str] = []
    not_ready: list[str] = []
    endpoints = await client.try_get(Endpoints, namespace, name)
    for subset in endpoints.subsets if endpoints else ():
        port = subset.ports[0].port if subset.ports else 0
        for lst, addresses in ((ready, subset.addresses), (not_ready, subset.not_ready_addresses)):
            for a in addresses:
                pod = a.target_ref.name if a.target_ref and a.target_ref.name else "-"
                lst.append(f"{pod} {a.ip}:{port}")
    proxy = ProxyView("", "", "", False, (), None)
    connection: str | None = None
    if cluster_ip not in ("", "None"):
        named = tuple((p.port, p.name or "") for p in tcp)
        proxy = await proxy_view(state_dir, namespace, name, cluster_ip, named)
        if ports:
            connection = await probes.exchange_in(proxy.netns_path, cluster_ip, ports[0])
    answer: tuple[str, ...] | None = None
    error = ""
    where = ""
    if server is not None:
        where = f"{server[0]}:{server[1]}"
        answer, error = await probes.query_a(server[0], server[1], dns_name)
    return ServiceFacts(
        namespace=namespace,
        name=name,
        exists=True,
        cluster_ip=cluster_ip,
        ports=ports,
        selector=selector,
        ready=tuple(sorted(ready)),
        not_ready=tuple(sorted(not_ready)),
        pods=tuple(sorted(pods, key=lambda p: p.name)),
        proxy_mode=proxy.mode,
        proxy_where=proxy.where,
        proxy_problem=proxy.problem,
        proxy_running=proxy.running,
        proxy_ports=proxy.ports,
        dns_name=dns_name,
        dns_server=where,
        dns_answer=answer,
        dns_error=error,
        connection=connection,
    )
