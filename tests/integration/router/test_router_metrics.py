"""The router's /metrics: OpenShift's haproxy_* series labelled with route, service and pod."""

from __future__ import annotations

import asyncio
import os
import urllib.request

from tests.support.backends import backends
from tests.support.leaks import LeakProbe
from tests.support.router import RouterEnv, endpoints, namespace, route, router_env, service
from tests.support.scrape import Scrape, scrape

from shiftnet.metrics_endpoint import MetricsEndpoint
from shiftnet.router.metrics import REGISTRY, HAProxyCollector

__all__ = ["router_env"]

REQUESTS = 7


async def _serving(env: RouterEnv, host: str) -> bool:
    return (await env.get(host)).status == 200


async def _scraped(url: str, server: dict[str, str], answers: float) -> Scrape | None:
    now = await asyncio.to_thread(scrape, url)
    seen = now.value("haproxy_server_http_responses_total", code="2xx", **server)
    return now if seen == answers else None


async def test_route_traffic_shows_in_haproxy_series_with_route_service_and_pod(
    router_env: RouterEnv,
) -> None:
    env = router_env
    collector = HAProxyCollector(env.router, asyncio.get_running_loop(), base_interval=0)
    endpoint = MetricsEndpoint(":0", [REGISTRY, collector])
    try:
        assert endpoint.host == "127.0.0.1"
        with backends("web-1") as (pod,):
            await env.apply(namespace("demo"), service("demo", "web"))
            await env.apply(endpoints("demo", "web", [pod]), route("demo", "web", "w.test", "web"))
            await env.eventually(lambda: _serving(env, "w.test"))
            before: Scrape = await asyncio.to_thread(scrape, endpoint.url)
            server = {"server": f"{pod.ip}:{pod.port}", "namespace": "demo", "route": "web"}
            server |= {"pod": "web-1", "service": "web"}
            backend = {"backend": "http", "namespace": "demo", "route": "web"}
            sent = REQUESTS
            ok_before = before.value("haproxy_server_http_responses_total", code="2xx", **server)
            conns_before = before.value("haproxy_backend_connections_total", **backend)
            assert ok_before is not None and conns_before is not None
            for _ in range(REQUESTS):
                assert (await env.get("w.test")).status == 200
            assert (await env.get("nobody.test")).status == 503
            # HAProxy counts an answer when its stream ends, a moment after the client read it
            after = await env.eventually(lambda: _scraped(endpoint.url, server, ok_before + sent))
        assert after.value("haproxy_up") == 1
        assert after.value("haproxy_server_http_responses_total", code="2xx", **server) == (
            ok_before + sent
        )
        assert after.value("haproxy_backend_http_responses_total", code="2xx", **backend) == (
            before.value("haproxy_backend_http_responses_total", code="2xx", **backend) + sent
        )
        assert after.value("haproxy_backend_connections_total", **backend) == conns_before + sent
        assert after.value("haproxy_server_up", **server) == 1
        assert after.value("haproxy_backend_up", **backend) == 1
        assert (after.value("haproxy_server_bytes_out_total", **server) or 0) > 0
        assert (after.value("haproxy_backend_bytes_in_total", **backend) or 0) > 0
        # the unknown host went to the default backend, outside any route
        default = {"backend": "other/openshift_default", "namespace": "", "route": ""}
        assert (after.value("haproxy_backend_http_responses_total", code="5xx", **default)) >= 1
        http_in = after.matching("haproxy_frontend_connections_total")
        assert http_in and sum(v for _, v in http_in) >= sent + 1
        # the router's own series sit beside them
        assert after.value("template_router_write_config_seconds_count") is not None
        # no reserve spare backend and no empty slot is exported
        assert not [
            lb for lb, _ in after.matching("haproxy_backend_up") if "spare" in lb["backend"]
        ]
        assert all(lb["pod"] for lb, _ in after.matching("haproxy_server_up", namespace="demo"))
    finally:
        endpoint.stop()


async def test_thousands_of_scrapes_leak_no_descriptor(router_env: RouterEnv) -> None:
    collector = HAProxyCollector(router_env.router, asyncio.get_running_loop(), base_interval=5)
    endpoint = MetricsEndpoint("127.0.0.1:0", [REGISTRY, collector])
    try:

        def many(n: int) -> None:
            # Each scrape is a whole connection and answer; parsing every one would
            # only spend the test's time, so the series are parsed once.
            for _ in range(n):
                with urllib.request.urlopen(endpoint.url, timeout=10) as resp:
                    assert resp.status == 200 and b"haproxy_up 1" in resp.read()

        # (off the loop: the collector asks HAProxy through it)
        first = await asyncio.to_thread(scrape, endpoint.url)
        assert first.value("haproxy_up") == 1
        await asyncio.to_thread(many, 50)
        probe = LeakProbe(os.getpid(), name="router metrics", rss_growth_kib=None)
        await asyncio.to_thread(many, 3000)
        await probe.settled()
    finally:
        endpoint.stop()
