"""The router's Prometheus metrics, with OpenShift's names where OpenShift has one.

A private registry per process keeps tests and several routers in one Python
process from colliding on the global default registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from shiftnet.router.haproxy_stats import (
    STAT_QUERY,
    GaugeSeries,
    StatLabels,
    families,
    parse_stat_csv,
    stat_labels,
)

log = logging.getLogger(__name__)

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


def remove_backend_series(backends: Iterable[str]) -> None:
    """Drop the per-backend series of ``backends``: ones HAProxy no longer has, or all
    of a router that stopped (the registry outlives routers started in one process)."""
    for name in backends:
        for gauge in (BACKEND_REQUESTS, BACKEND_ERRORS):
            with contextlib.suppress(KeyError):
                gauge.remove(name)


class HAProxyCollector(Collector):
    """OpenShift's ``haproxy_*`` series, read from HAProxy when Prometheus scrapes.

    The HTTP endpoint runs in its own thread; the stats and their labels are
    taken on the router's event loop (``router.haproxy_stats()``), so the
    join never sees the router's maps half-updated. As OpenShift's exporter,
    a scrape within ``base_interval`` seconds per 1,000 rows of the last one
    is answered from that one: a scrape costs HAProxy a full ``show stat``.
    """

    def __init__(
        self,
        router: Any,
        loop: asyncio.AbstractEventLoop,
        base_interval: float = 5.0,
        timeout: float = 5.0,
    ) -> None:
        self.router = router
        self.loop = loop
        self.base_interval = base_interval
        self.timeout = timeout
        self._lock = threading.Lock()
        self._last: list[Metric] = []
        self._next = 0.0
        self.scrapes = 0
        self.up = 0.0

    def describe(self) -> list[Metric]:
        return []  # names depend on HAProxy's rows; no scrape at registration

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            now = time.monotonic()
            if now >= self._next:
                self._last, rows = self._scrape()
                self._next = now + self.base_interval * (rows / 1000 + 1)
            up = GaugeMetricFamily("haproxy_up", "Was the last scrape of HAProxy successful.")
            up.add_metric([], self.up)
            total = CounterMetricFamily("haproxy_exporter_total_scrapes", "HAProxy scrapes.")
            total.add_metric([], self.scrapes)
            yield from (up, total, *self._last)

    def _scrape(self) -> tuple[list[Metric], int]:
        """The series and the number of ``show stat`` rows they came from."""
        self.scrapes += 1
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:  # on an event loop thread: waiting for the router's loop could deadlock
            self.up = 0.0
            return [], 0
        future = asyncio.run_coroutine_threadsafe(haproxy_stats(self.router), self.loop)
        try:
            text, labels = future.result(self.timeout)
        except Exception as err:  # a failed scrape is haproxy_up 0, never a 500
            future.cancel()
            log.info("haproxy stats not read error=%s", err)
            self.up = 0.0
            return [], 0
        self.up = 1.0
        rows = parse_stat_csv(text)
        return [_gauge(series) for series in families(rows, labels)], len(rows)


def _gauge(series: GaugeSeries) -> GaugeMetricFamily:
    family = GaugeMetricFamily(series.name, series.documentation, labels=series.label_names)
    for sample in series.samples:
        family.add_metric([sample.labels[name] for name in series.label_names], sample.value)
    return family


async def haproxy_stats(router: Any) -> tuple[str, StatLabels]:
    """HAProxy's full ``show stat`` and who each row serves, read on the router's loop.

    The labels join the router's assembly (route -> backend), its L7 policies
    (servers -> pod, pool -> service) and what the driver has HAProxy run
    (spares serving routes, filled slots)."""
    text = await router.driver.runtime.query(STAT_QUERY)
    served = router.served()
    if served is None:
        return text, StatLabels()
    backends, policies = served
    driver = router.driver
    return text, stat_labels(backends, policies, driver.live_backends, driver.aliases)
