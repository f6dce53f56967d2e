"""What the proxy's health check servers answer (pure: no I/O, no clocks).

kube-proxy serves two kinds of health check, and so does this proxy:

* one per Service of ``type: LoadBalancer`` with ``externalTrafficPolicy:
  Local`` on its ``spec.healthCheckNodePort``: a load balancer asks every node
  and sends the Service's traffic only to nodes that answer 200, the nodes
  with a ready endpoint of their own (the others would drop it);
* the proxy's own ``/healthz`` and ``/livez``: 200 while its syncs keep up.

A mode that cannot serve a Local Service's outside traffic at all (user-space: a
relay loses the client's address, so its node port is never opened) reports no
local endpoint, so no balancer sends this node traffic it would refuse.

Bodies are JSON built by ``json.dumps`` only (never by formatting strings), so
no name, however odd, can break them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from shiftnet.api import Endpoints, Service

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}


@dataclass(frozen=True)
class HealthCheckTarget:
    """One Service's health check: where it is served and what it reports."""

    namespace: str
    name: str
    port: int
    local_endpoints: int


def health_check_port(svc: Service) -> int:
    """The port a Service's health check is served on, 0 when it has none."""
    spec = svc.spec
    port = spec.health_check_node_port or 0
    if spec.type != "LoadBalancer" or spec.external_traffic_policy != "Local":
        return 0
    return port if 0 < port < 65536 else 0


def local_ready_endpoints(endpoints: Endpoints | None, node_name: str | None) -> int:
    """Distinct ready ``ip:port`` endpoints on ``node_name`` (kube-proxy counts these;
    serving-but-terminating ones do not count, so a balancer drains a node whose pods
    are all going away)."""
    if endpoints is None or not node_name:
        return 0
    found: set[tuple[str, int]] = set()
    for subset in endpoints.subsets:
        local = [a.ip for a in subset.addresses if a.node_name == node_name]
        found.update((ip, port.port) for ip in local for port in subset.ports)
        if not subset.ports:
            found.update((ip, 0) for ip in local)
    return len(found)


def target(
    svc: Service,
    endpoints: Endpoints | None,
    node_name: str | None,
    *,
    serves_local_traffic: bool,
) -> HealthCheckTarget:
    """``serves_local_traffic``: whether this proxy's mode opens the Service's node port,
    external IPs and LB addresses at all; when it does not, none of its endpoints is
    reachable from outside through this node, so the count is 0 (503)."""
    local = local_ready_endpoints(endpoints, node_name) if serves_local_traffic else 0
    return HealthCheckTarget(
        namespace=svc.metadata.namespace or "default",
        name=svc.metadata.name,
        port=health_check_port(svc),
        local_endpoints=local,
    )


def service_answer(t: HealthCheckTarget, proxy_healthy: bool) -> tuple[int, bytes]:
    """kube-proxy's answer on a health check node port, for any path: 200 when the node
    has a local ready endpoint and the proxy is healthy, 503 otherwise."""
    body = {
        "service": {"namespace": t.namespace, "name": t.name},
        "localEndpoints": t.local_endpoints,
        "serviceProxyHealthy": proxy_healthy,
    }
    status = 200 if t.local_endpoints > 0 and proxy_healthy else 503
    return status, json.dumps(body).encode()


def proxy_answer(healthy: bool, last_updated: str, current_time: str) -> tuple[int, bytes]:
    """kube-proxy's ``/healthz`` and ``/livez``: when the proxy last synced, and now."""
    body = {"lastUpdated": last_updated, "currentTime": current_time}
    return (200 if healthy else 503), json.dumps(body).encode()


def proxy_healthy(
    now: float, last_synced: float | None, oldest_queued: float | None, timeout: float
) -> bool:
    """kube-proxy's rule: healthy once a sync succeeded, unless a change has waited
    longer than ``timeout`` (monotonic seconds) without a sync that took it."""
    if last_synced is None:
        return False
    return oldest_queued is None or now - oldest_queued <= timeout


def http_response(status: int, body: bytes, *, head: bool = False) -> bytes:
    """One HTTP/1.1 response with kube-proxy's headers; the connection closes after it."""
    lines = [
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}",
        "Content-Type: application/json",
        "X-Content-Type-Options: nosniff",
        f"Content-Length: {len(body)}",
        "Connection: close",
        "",
        "",
    ]
    return "\r\n".join(lines).encode() + (b"" if head else body)


def request_line(head: bytes) -> tuple[str, str] | None:
    """The method and path of a request's head (up to the blank line); None if malformed."""
    first = head.split(b"\r\n", 1)[0].split(b"\n", 1)[0]
    parts = first.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    try:
        method, target_path = parts[0].decode("ascii"), parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None
    if not method.isalpha() or not target_path:
        return None
    return method, target_path.split("?", 1)[0]
