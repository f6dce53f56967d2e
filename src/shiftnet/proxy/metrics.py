"""The service proxy's Prometheus metrics, with kube-proxy's names and buckets.

A private registry, as the router's and the master's: ``shiftnet proxy``
serves it on ``--metrics-listen`` and ``shiftnet up`` on its own loopback
port. What each series measures here, where kube-proxy's meaning needs a
word: a *change* is one Service (or one endpoints object) event seen by the
proxy's informers; *pending* counts the services waiting for the next sync;
network programming time runs from when the proxy saw a service's first
unsynced change to the end of the sync that programmed it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

_SYNC_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # kube-proxy: 1 ms doubling 15 times
# kube-proxy's: quarter seconds, then seconds, 5 s and 30 s steps up to 5 minutes
_PROGRAMMING_BUCKETS = (
    0.25,
    0.5,
    *map(float, range(1, 60)),
    *map(float, range(60, 120, 5)),
    *map(float, range(120, 330, 30)),
)

SYNC_PROXY_RULES_SECONDS = Histogram(
    "kubeproxy_sync_proxy_rules_duration_seconds",
    "SyncProxyRules latency in seconds",
    buckets=_SYNC_BUCKETS,
    registry=REGISTRY,
)
SYNC_FULL_PROXY_RULES_SECONDS = Histogram(
    "kubeproxy_sync_full_proxy_rules_duration_seconds",
    "SyncProxyRules latency in seconds for full resyncs (iptables, nftables)",
    buckets=_SYNC_BUCKETS,
    registry=REGISTRY,
)
SYNC_PARTIAL_PROXY_RULES_SECONDS = Histogram(
    "kubeproxy_sync_partial_proxy_rules_duration_seconds",
    "SyncProxyRules latency in seconds for partial resyncs (iptables, nftables)",
    buckets=_SYNC_BUCKETS,
    registry=REGISTRY,
)
NETWORK_PROGRAMMING_SECONDS = Histogram(
    "kubeproxy_network_programming_duration_seconds",
    "In-cluster network programming latency in seconds",
    buckets=_PROGRAMMING_BUCKETS,
    registry=REGISTRY,
)
LAST_SYNC_TIMESTAMP = Gauge(
    "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
    "The last time proxy rules were successfully synced",
    registry=REGISTRY,
)
LAST_QUEUED_TIMESTAMP = Gauge(
    "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
    "The last time a sync of proxy rules was queued",
    registry=REGISTRY,
)
ENDPOINT_CHANGES = Counter(
    "kubeproxy_sync_proxy_rules_endpoint_changes",
    "Cumulative proxy rules Endpoint changes",
    registry=REGISTRY,
)
ENDPOINT_CHANGES_PENDING = Gauge(
    "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
    "Pending proxy rules Endpoint changes",
    registry=REGISTRY,
)
SERVICE_CHANGES = Counter(
    "kubeproxy_sync_proxy_rules_service_changes",
    "Cumulative proxy rules Service changes",
    registry=REGISTRY,
)
SERVICE_CHANGES_PENDING = Gauge(
    "kubeproxy_sync_proxy_rules_service_changes_pending",
    "Pending proxy rules Service changes",
    registry=REGISTRY,
)
IPTABLES_PARTIAL_RESTORE_FAILURES = Counter(
    "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures",
    "Cumulative proxy iptables partial restore failures",
    registry=REGISTRY,
)
SYNC_FAILURES = Counter(
    "shiftnet_proxy_sync_failures",
    "Syncs whose rules the kernel (or the user-space listeners) refused",
    registry=REGISTRY,
)
