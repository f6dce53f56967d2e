"""The node agent's Prometheus metrics (a private registry, as the master's and router's).

Labels never carry pod names: a node may run many pods, and their names
belong in logs and ``shiftnet get``, not in metric series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

PODS_RUNNING = Gauge(
    "shiftnet_node_pods",
    "Pods this node agent runs (with a runner, any phase).",
    registry=REGISTRY,
)
POD_IPS_FREE = Gauge(
    "shiftnet_node_pod_ips_free",
    "Addresses still free in this node's pod subnet.",
    registry=REGISTRY,
)
CONTAINER_STARTS = Counter(
    "shiftnet_node_container_starts",
    "Container processes started (first starts and restarts).",
    registry=REGISTRY,
)
CONTAINER_EXITS = Counter(
    "shiftnet_node_container_exits",
    "Container processes that ended on their own, by reason "
    "(Completed, Error, StartError, Unknown).",
    ["reason"],
    registry=REGISTRY,
)
PROBES = Counter(
    "shiftnet_node_readiness_probes",
    "Readiness probe attempts by kind (tcpSocket, httpGet, exec) and result (success, failure).",
    ["kind", "result"],
    registry=REGISTRY,
)
LIVENESS_KILLS = Counter(
    "shiftnet_node_liveness_restarts",
    "Containers stopped because their liveness probe failed failureThreshold times.",
    registry=REGISTRY,
)
STATUS_WRITES = Counter(
    "shiftnet_node_pod_status_writes",
    "Pod status updates written to the store.",
    registry=REGISTRY,
)
SYNC_SECONDS = Histogram(
    "shiftnet_node_sync_seconds",
    "Duration of one node agent sync (reconcile pods, write statuses).",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5),
    registry=REGISTRY,
)


def probe_kind(has_tcp: bool, has_http: bool, has_exec: bool) -> str:
    if has_tcp:
        return "tcpSocket"
    if has_http:
        return "httpGet"
    return "exec" if has_exec else "none"
