"""The router's Prometheus metrics, with OpenShift's names where OpenShift has one.

A private registry per process keeps tests and several routers in one Python
process from colliding on the global default registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

RELOAD_SECONDS = Histogram(
    "template_router_reload_seconds",
    "Time spent reloading HAProxy after a configuration change.",
    registry=REGISTRY,
)
WRITE_CONFIG_SECONDS = Histogram(
    "template_router_write_config_seconds",
    "Time spent rendering, checking and writing the HAProxy configuration.",
    registry=REGISTRY,
)
RELOAD_FAILURE = Gauge(
    "template_router_reload_failure",
    "1 when the last configuration could not be loaded (the previous one keeps serving).",
    registry=REGISTRY,
)
RELOADS = Counter(
    "shiftnet_router_reloads",
    "HAProxy reloads performed.",
    registry=REGISTRY,
)
RELOAD_FAILURES = Counter(
    "shiftnet_router_reload_failures",
    "Configurations refused by haproxy -c or by the HAProxy master.",
    ["reason"],
    registry=REGISTRY,
)
RUNTIME_UPDATES = Counter(
    "shiftnet_router_runtime_updates",
    "Changes applied through the HAProxy runtime API without a reload.",
    registry=REGISTRY,
)
RUNTIME_FALLBACKS = Counter(
    "shiftnet_router_runtime_fallbacks",
    "Changes the runtime API could not express, applied by a reload instead.",
    ["reason"],
    registry=REGISTRY,
)
HAPROXY_RESTARTS = Counter(
    "shiftnet_router_haproxy_restarts",
    "Times the router found HAProxy dead and started it again.",
    registry=REGISTRY,
)
BACKEND_REQUESTS = Gauge(
    "haproxy_backend_http_requests_total",
    "HTTP requests (sessions for TCP backends) per backend, read from HAProxy's show stat.",
    ["backend"],
    registry=REGISTRY,
)
BACKEND_ERRORS = Gauge(
    "haproxy_backend_errors_total",
    "Connection and response errors plus 5xx answers per backend, from show stat.",
    ["backend"],
    registry=REGISTRY,
)
