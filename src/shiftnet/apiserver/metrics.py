"""The API server's Prometheus series, under kube-apiserver's names and labels.

Why these: operators' dashboards and alerts for a Kubernetes API read
``apiserver_request_total`` (by verb, group, version, resource, subresource,
scope, component, code), ``apiserver_request_duration_seconds``,
``apiserver_current_inflight_requests`` (by ``request_kind``),
``apiserver_longrunning_requests`` and ``apiserver_registered_watchers``
(by group, version, kind). One middleware, outermost, sees every request,
refused ones (401) included. Verbs are upstream's reported verbs (GET, LIST,
WATCH, POST, PUT, PATCH, DELETE, DELETECOLLECTION); long-running requests
(watches, pod logs) are counted when they end and held in the long-running
gauges meanwhile, not in the in-flight gauge nor the duration histogram, as
upstream. Labels come only from served resources and known methods, so a
client's URL never adds a series. Each server has its own registry.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from shiftnet.apiserver.paths import parse_path

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

COMPONENT = "apiserver"
# kube-apiserver's buckets for apiserver_request_duration_seconds
DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5,
    2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
READ_ONLY = ("GET", "HEAD", "LIST", "WATCH", "OPTIONS")
LONG_RUNNING_SUBRESOURCES = ("log", "exec", "attach", "portforward", "proxy")
STATUS_KEY = "shiftnet_metrics_status"  # the status a response was started with
REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope")


@dataclass(frozen=True)
class RequestInfo:
    """One request as the series label it (pure)."""

    verb: str
    dry_run: str
    group: str
    version: str
    resource: str
    subresource: str
    scope: str
    kind: str  # the resource's kind ("" outside the resource tree)
    long_running: bool

    def labels(self) -> tuple[str, ...]:
        return (*(str(getattr(self, name)) for name in REQUEST_LABELS), COMPONENT)


def _flag(query: Any, key: str) -> str:
    return str(query.get(key, "")).lower()


def request_info(method: str, path: str, query: Any) -> RequestInfo:
    """Upstream's verb, scope and resource labels of a request (pure)."""
    method = method if method in METHODS else "other"
    dry_run = "All" if query.get("dryRun") == "All" else ""
    target = parse_path(path)
    if target is None or target.resource is None:  # a non-resource URL, or not served
        return RequestInfo(method, dry_run, "", "", "", "", "", "", False)
    name = target.name
    verb = method
    if method in ("GET", "HEAD"):
        if _flag(query, "watch") in ("true", "1"):
            verb = "WATCH"
        elif name is None:
            verb = "LIST"
        else:
            verb = "GET"
    elif method == "DELETE" and name is None:
        verb = "DELETECOLLECTION"
    if name is not None or method == "POST":
        scope = "resource"
    elif target.namespace is not None:
        scope = "namespace"
    else:
        scope = "cluster"
    sub = target.subresource or ""
    return RequestInfo(
        verb=verb,
        dry_run=dry_run,
        group=target.resource.group,
        version=target.resource.version,
        resource=target.resource.plural,
        subresource=sub,
        scope=scope,
        kind=target.resource.kind,
        long_running=verb == "WATCH" or sub in LONG_RUNNING_SUBRESOURCES,
    )


class APIServerMetrics:
    """The series of one API server, and the middleware that keeps them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = (*REQUEST_LABELS, "component")
        self.requests = Counter(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            (*labels, "code"),
            registry=self.registry,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component (long-running requests "
            "are not timed).",
            labels,
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.inflight = Gauge(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second (here: requests being served now).",
            ("request_kind",),
            registry=self.registry,
        )
        self.long_running = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, "
            "version, resource, scope and component.",
            labels,
            registry=self.registry,
        )
        self.watchers = Gauge(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            ("group", "version", "kind"),
            registry=self.registry,
        )
        for kind in ("readOnly", "mutating"):  # both series exist from the start, at 0
            self.inflight.labels(kind)

    def middleware(self) -> Middleware:
        @web.middleware
        async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
            info = request_info(request.method, request.path, request.query)
            labels = info.labels()
            if info.long_running:
                gauge = self.long_running.labels(*labels)
            else:
                kind = "readOnly" if info.verb in READ_ONLY else "mutating"
                gauge = self.inflight.labels(kind)
            watch = None
            if info.verb == "WATCH":
                watch = self.watchers.labels(info.group, info.version, info.kind)
                watch.inc()
            gauge.inc()
            start = time.perf_counter()
            code = "500"
            try:
                response = await handler(request)
                code = str(response.status)
                return response
            except web.HTTPException as err:  # raised past every other middleware
                code = str(err.status)
                raise
            except BaseException:
                # a watch or log whose client went away: what it had started answering
                code = str(request.get(STATUS_KEY) or code)
                raise
            finally:
                gauge.dec()
                if watch is not None:
                    watch.dec()
                self.requests.labels(*labels, code).inc()
                if not info.long_running:
                    self.duration.labels(*labels).observe(time.perf_counter() - start)

        return count

    def install(self, app: web.Application) -> None:
        """Remember each response's status when its headers go out (a stream's, too)."""

        async def started(request: web.Request, response: web.StreamResponse) -> None:
            request[STATUS_KEY] = response.status

        app.on_response_prepare.append(started)
