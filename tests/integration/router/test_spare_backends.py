"""Route add, change and delete served through spare backends and map entries, with no reload.

HAProxy 2.6 cannot add a backend at run time, so a new route takes a spare
backend of its kind through the runtime API; the reload that renders it
normally comes later (here: RELOAD_INTERVAL 60 s, so it cannot happen inside
the test unless we flush). Each test checks the reload counters of the driver
and of HAProxy's master both stay unchanged while traffic is served.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.backends import backends
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.api import Route
from shiftnet.router import metrics

pytestmark = pytest.mark.integration


@pytest.fixture
async def slow_reload_env(tmp_path: Path) -> AsyncIterator[RouterEnv]:
    env = RouterEnv(tmp_path, extra_env={"RELOAD_INTERVAL": "60", "ROUTER_SPARE_BACKENDS": "4"})
    try:
        await env.start()
        yield env
    finally:
        await env.stop()


async def _status(env: RouterEnv, host: str, path: str = "/") -> int:
    return (await env.get(host, path)).status


async def _until(env: RouterEnv, host: str, want: int, path: str = "/") -> float:
    """Seconds until ``host`` answers ``want`` (fails after 30 s: a loaded machine is slow;
    callers that promise a latency assert on the seconds returned)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        if await _status(env, host, path) == want:
            return time.monotonic() - t0
    raise AssertionError(f"{host}{path} never answered {want}")


async def _served_by(env: RouterEnv, host: str, path: str, pod: str) -> bool:
    return (await env.get(host, path)).backend == pod


async def _count_served(env: RouterEnv, n: int, want: int) -> bool:
    served = [await _status(env, f"n{i}.example.com") for i in range(n)]
    return served.count(200) == want


async def _synced_and_served(env: RouterEnv, host: str) -> bool:
    await env.router.sync_now()
    return await _status(env, host) == 200


async def _serves_all(env: RouterEnv, host: str, pods: set[str], path: str = "/") -> bool:
    """Within 5 s, requests to ``host`` reached every pod of ``pods``."""
    seen: set[str] = set()
    t0 = time.monotonic()
    while seen != pods and time.monotonic() - t0 < 5:
        seen.add((await env.get(host, path)).backend)
    return seen == pods


async def _true(value: bool) -> bool:
    return value


async def _reloads(env: RouterEnv) -> tuple[int, int]:
    master = (await env.router.driver.process.wait_status(5)).reloads
    return env.router.driver.reloads, master


async def test_route_add_change_delete_without_reload(slow_reload_env: RouterEnv) -> None:
    env = slow_reload_env
    with backends("a-1", "a-2", "b-1") as (a1, a2, b1):
        await env.apply(namespace("demo"), service("demo", "a"), endpoints("demo", "a", [a1]))
        await env.apply(service("demo", "b"), endpoints("demo", "b", [b1]))
        await env.router.sync_now()
        before = await _reloads(env)
        fallbacks = env.router.driver.fallbacks

        # A new plain HTTP route with a path: served within a second, by a spare.
        await env.apply(route("demo", "ra", "a.example.com", "a", path="/foo"))
        assert await _until(env, "a.example.com", 200, "/foo/bar") < 1.5
        assert (await env.get("a.example.com", "/foo")).backend == "a-1"
        assert await _status(env, "a.example.com", "/foobar") == 503
        assert env.router.driver.aliases == {"be_http:demo:ra": "be_spare_http:0"}

        # A second route on the same host, longer path: longest path wins at once.
        await env.apply(route("demo", "rb", "a.example.com", "b", path="/foo/deep"))
        await env.eventually(lambda: _served_by(env, "a.example.com", "/foo/deep/x", "b-1"))
        assert (await env.get("a.example.com", "/foo/other")).backend == "a-1"

        # Endpoints of an aliased route change: the spare's slots follow.
        await env.apply(endpoints("demo", "a", [a1, a2]))
        assert await _serves_all(env, "a.example.com", {"a-1", "a-2"}, "/foo")

        # Changing the route's host moves its map entries.
        await env.apply(route("demo", "ra", "moved.example.com", "a", path="/foo"))
        await _until(env, "moved.example.com", 200, "/foo")
        assert await _status(env, "a.example.com", "/foo") == 503

        # Deleting routes: 503 at once; the spare goes back to the pool.
        await env.delete(Route, "demo", "rb")
        await _until(env, "a.example.com", 503, "/foo/deep/x")
        await env.eventually(lambda: _true(len(env.router.driver.aliases) == 1))
        assert env.router.driver.aliases == {"be_http:demo:ra": "be_spare_http:0"}

        # Edge and passthrough routes take spares of their own kind.
        await env.apply(route("demo", "edge", "e.example.com", "b", tls={"termination": "edge"}))
        r = await _until_tls(env, "e.example.com")
        assert r.backend == "b-1"
        assert env.router.driver.aliases["be_edge_http:demo:edge"] == "be_spare_edge:0"

        assert await _reloads(env) == before
        assert env.router.driver.fallbacks == fallbacks

        # The files on disk render the routes normally; the owed reload serves them alike.
        cfg = (env.work_dir / "conf" / "haproxy.cfg").read_text()
        assert "backend be_http:demo:ra " in cfg and "be_http:demo:rb" not in cfg
        await env.router.driver.flush()
        assert env.router.driver.reloads == before[0] + 1
        assert env.router.driver.aliases == {}
        assert (await env.get("moved.example.com", "/foo")).status == 200
        assert (await env.get_tls("e.example.com")).backend == "b-1"
        assert await _status(env, "a.example.com", "/foo/deep/x") == 503


async def _until_tls(env: RouterEnv, host: str):  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        r = await env.get_tls(host)
        if r.status == 200:
            return r
    raise AssertionError(f"{host} never served over TLS")


async def test_deleted_loaded_route_and_spares_exhausted(slow_reload_env: RouterEnv) -> None:
    env = slow_reload_env
    with backends("c-1", *(f"n-{i}" for i in range(5))) as (c1, *own):
        await env.apply(namespace("demo"), service("demo", "c"), endpoints("demo", "c", [c1]))
        for i, pod in enumerate(own):  # pods of their own: no backend to share
            await env.apply(service("demo", f"n{i}"), endpoints("demo", f"n{i}", [pod]))
        await env.apply(route("demo", "loaded", "loaded.example.com", "c"))
        await _until(env, "loaded.example.com", 200)
        await env.router.sync_now()  # the owed reload: the route has its own backend now
        assert env.router.driver.aliases == {}
        before = await _reloads(env)
        # A route loaded by the last reload is deleted: 503 with no reload.
        await env.delete(Route, "demo", "loaded")
        await _until(env, "loaded.example.com", 503)
        assert await _reloads(env) == before
        # Re-created before the reload: its old backend is reused, still no reload.
        await env.apply(route("demo", "loaded", "loaded.example.com", "c"))
        await _until(env, "loaded.example.com", 200)
        assert await _reloads(env) == before
        # Four spares per kind here: the fifth new route needs the reload (a fallback).
        fallbacks = (
            metrics.REGISTRY.get_sample_value(
                "shiftnet_router_runtime_fallbacks_total", {"reason": "no-spare"}
            )
            or 0.0
        )
        for i in range(5):
            await env.apply(route("demo", f"n{i}", f"n{i}.example.com", f"n{i}"))
        # Four are served by spares at once; the fifth waits for the reload.
        await env.eventually(lambda: _count_served(env, 5, 4))
        assert await _reloads(env) == before
        await env.router.sync_now()  # the reload RELOAD_INTERVAL would hold back
        for i in range(5):
            await _until(env, f"n{i}.example.com", 200)
        assert env.router.driver.reloads >= before[0] + 1
        after = metrics.REGISTRY.get_sample_value(
            "shiftnet_router_runtime_fallbacks_total", {"reason": "no-spare"}
        )
        assert after is not None and after > fallbacks


async def test_routes_created_before_their_pods_are_served_without_a_reload(
    slow_reload_env: RouterEnv,
) -> None:
    # Routes without pods each take a spare of their own (four here) or wait; when the
    # pods come, the five on one Service share one backend, and the spares they leave
    # serve the route alone in the same change, not at the next reload.
    env = slow_reload_env
    shared = ("a", "b", "c", "d", "f")
    with backends("p-1", "u-1") as (p1, u1):
        await env.apply(namespace("demo"), service("demo", "s"), service("demo", "us"))
        for name in shared:
            await env.apply(route("demo", name, f"{name}.example.com", "s"))
        await env.apply(route("demo", "solo", "solo.example.com", "us"))
        await env.eventually(lambda: _true(len(env.router.driver.aliases) == 4))
        before = await _reloads(env)
        await env.apply(endpoints("demo", "s", [p1]), endpoints("demo", "us", [u1]))
        await env.eventually(lambda: _served_by(env, "solo.example.com", "/", "u-1"))
        for name in shared:
            assert (await env.get(f"{name}.example.com")).backend == "p-1", name
        assert await _reloads(env) == before
        assert sorted(env.router.driver.aliases) == ["be_http:demo:a", "be_http:demo:solo"]


async def test_a_restarted_haproxy_is_planned_from_the_files_it_loaded(
    slow_reload_env: RouterEnv,
) -> None:
    # The route is on a spare when HAProxy dies; the new process serves it from the files
    # on disk (its own backend). A pod change after that must reach that backend at once,
    # not the spare of the dead process's runtime changes.
    env = slow_reload_env
    with backends("r-1", "r-2") as (r1, r2):
        await env.apply(namespace("demo"), service("demo", "r"), endpoints("demo", "r", [r1]))
        await env.apply(route("demo", "r", "r.example.com", "r"))
        await env.eventually(lambda: _served_by(env, "r.example.com", "/", "r-1"))
        assert env.router.driver.aliases == {"be_http:demo:r": "be_spare_http:0"}
        reloads = env.router.driver.reloads
        pid = env.router.driver.process.read_pid()
        os.kill(pid, signal.SIGKILL)
        await env.eventually(lambda: _true(env.router.driver.process.restarts >= 1))
        await env.eventually(lambda: _served_by(env, "r.example.com", "/", "r-1"))
        assert env.router.driver.aliases == {}
        await env.apply(endpoints("demo", "r", [r2]))
        await env.eventually(lambda: _served_by(env, "r.example.com", "/", "r-2"), timeout=5)
        assert env.router.driver.reloads == reloads


async def test_one_pod_to_two_without_reload(slow_reload_env: RouterEnv) -> None:
    env = slow_reload_env
    ann = {
        "haproxy.router.openshift.io/balance": "roundrobin",
        "haproxy.router.openshift.io/disable_cookies": "true",
    }
    with backends("h-1", "h-2") as (h1, h2):
        await env.apply(namespace("demo"), service("demo", "h"), endpoints("demo", "h", [h1]))
        await env.apply(route("demo", "h", "h.example.com", "h", annotations=ann))
        # Annotated routes do not fit a spare: they wait for the reload (forced here).
        await env.eventually(lambda: _synced_and_served(env, "h.example.com"))
        before = await _reloads(env)
        await env.apply(endpoints("demo", "h", [h1, h2]))
        assert await _serves_all(env, "h.example.com", {"h-1", "h-2"})
        await env.apply(endpoints("demo", "h", [h2]))
        await env.eventually(lambda: _only(env, "h-2"))
        assert await _reloads(env) == before


async def _only(env: RouterEnv, name: str) -> bool:
    replies = [await env.get("h.example.com") for _ in range(6)]
    return all(r.backend == name for r in replies)


async def test_metrics_count_requests_and_errors_of_a_route_on_a_spare(
    slow_reload_env: RouterEnv,
) -> None:
    env = slow_reload_env
    writes = metrics.REGISTRY.get_sample_value("template_router_write_config_seconds_count") or 0
    with backends("m-1") as (m1,):
        await env.apply(namespace("demo"), service("demo", "m"), endpoints("demo", "m", [m1]))
        await env.apply(route("demo", "m", "m.example.com", "m"))
        await _until(env, "m.example.com", 200)
        spare = env.router.driver.aliases["be_http:demo:m"]
        for _ in range(3):
            assert await _status(env, "m.example.com") == 200
        m1.stop()
        for _ in range(2):  # HAProxy retries the refused pod a few times (~1 s apart) first
            assert (await env.get("m.example.com", timeout=30)).status == 503
    requests, errors = await _backend_counts(env, spare, requests=6, errors=2)
    assert requests is not None and requests >= 6
    assert errors is not None and errors >= 2
    # Runtime updates write the files too, and that is timed like a reload's write.
    assert metrics.REGISTRY.get_sample_value("template_router_write_config_seconds_count") > writes
    assert metrics.REGISTRY.get_sample_value("template_router_reload_failure") == 0


async def _backend_counts(
    env: RouterEnv, backend: str, *, requests: int, errors: int, timeout: float = 30.0
) -> tuple[float | None, float | None]:
    """``backend``'s request and error counts as the router publishes them, asked again
    until they reach ``requests`` and ``errors`` or ``timeout`` passes.

    HAProxy counts a stream when it ends, which may be just after the client read its
    answer: a stats query sent at once can miss the last requests on a loaded machine.
    """
    deadline = time.monotonic() + timeout
    while True:
        await env.router.update_backend_metrics()
        got = (
            metrics.REGISTRY.get_sample_value(
                "haproxy_backend_http_requests_total", {"backend": backend}
            ),
            metrics.REGISTRY.get_sample_value("haproxy_backend_errors_total", {"backend": backend}),
        )
        if (got[0] or 0) >= requests and (got[1] or 0) >= errors:
            return got
        if time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.1)


ROUTER_TASKS = {
    "router-sync",
    "router-endpoints",
    "router-status",
    "haproxy-reload",
    "haproxy-watch",
}


def _router_tasks() -> set[str]:
    return {
        t.get_name()
        for t in asyncio.all_tasks()
        if t.get_name().startswith(("router-", "haproxy-"))
    }


async def test_owed_reload_runs_once_changes_pause(tmp_path: Path) -> None:
    env = RouterEnv(tmp_path, extra_env={"RELOAD_INTERVAL": "0"})
    try:
        await env.start()
        env.router.driver.owed_reload_quiet = 1.0
        with backends("o-1") as (o1,):
            await env.apply(namespace("demo"), service("demo", "o"), endpoints("demo", "o", [o1]))
            await env.router.sync_now()
            reloads = env.router.driver.reloads
            await env.apply(route("demo", "o", "o.example.com", "o"))
            await _until(env, "o.example.com", 200)
            # Served through a spare at once; no reload yet (it waits for a quiet second).
            assert env.router.driver.aliases == {"be_http:demo:o": "be_spare_http:0"}
            assert env.router.driver.reloads == reloads
            # The owed reload is a quiet kick of haproxy-reload: no task of its own.
            assert _router_tasks() == ROUTER_TASKS
            # Then the owed reload renders the route's own backend, and it keeps serving.
            await env.eventually(lambda: _true(env.router.driver.aliases == {}), timeout=15)
            assert env.router.driver.reloads == reloads + 1
            assert (await env.get("o.example.com")).backend == "o-1"
    finally:
        await env.stop()


async def test_router_restarted_while_a_reload_is_owed_reloads_once(
    slow_reload_env: RouterEnv,
) -> None:
    env = slow_reload_env
    with backends("w-1") as (w1,):
        await env.apply(namespace("demo"), service("demo", "w"), endpoints("demo", "w", [w1]))
        await env.apply(route("demo", "w", "w.example.com", "w"))
        await _until(env, "w.example.com", 200)
        await env.eventually(lambda: _true(bool(env.router.driver.aliases)))  # on a spare
        assert (env.work_dir / "reload-owed").exists()
        await env.router.stop(stop_haproxy=False)  # as if the router died
        await env.start()  # adopts HAProxy; the runtime state it left is unknown: reload
        assert env.router.driver.reloads == 1
        assert not (env.work_dir / "reload-owed").exists()
        assert env.router.driver.aliases == {}
        assert (await env.get("w.example.com")).backend == "w-1"


async def _backend_of(env: RouterEnv, host: str, want: str) -> bool:
    return (await env.get(host)).backend == want


async def test_shared_backend_follows_pods_and_splits_without_reload(
    slow_reload_env: RouterEnv,
) -> None:
    """Routes with the same pods share a backend; a pod change never mixes their traffic."""
    env = slow_reload_env
    with backends("p-1", "p-2", "q-1") as (p1, p2, q1):
        await env.apply(namespace("demo"))
        for svc in ("s1", "s2"):
            await env.apply(service("demo", svc), endpoints("demo", svc, [p1]))
        await env.apply(
            route("demo", "a", "a.example.com", "s1"), route("demo", "b", "b.example.com", "s2")
        )
        await env.eventually(lambda: _synced_and_served(env, "b.example.com"))
        assert env.router.driver.aliases == {}
        cfg = (env.work_dir / "conf" / "haproxy.cfg").read_text()
        assert "backend be_http:demo:a " in cfg and "backend be_http:demo:b " not in cfg
        before = await _reloads(env)

        # Both services gain the same pod: the one shared backend gets a server.
        for svc in ("s1", "s2"):
            await env.apply(endpoints("demo", svc, [p1, p2]))
        assert await _serves_all(env, "b.example.com", {"p-1", "p-2"})

        # s2 moves to a pod of its own: b leaves the group (a spare serves it), a stays.
        await env.apply(endpoints("demo", "s2", [q1]))
        await env.eventually(lambda: _backend_of(env, "b.example.com", "q-1"))
        for _ in range(6):
            assert (await env.get("b.example.com")).backend == "q-1"
            assert (await env.get("a.example.com")).backend in ("p-1", "p-2")
        assert env.router.driver.aliases == {"be_http:demo:b": "be_spare_http:0"}
        assert await _reloads(env) == before

        # The first route goes: b's backend was already its own; a answers 503.
        await env.delete(Route, "demo", "a")
        await _until(env, "a.example.com", 503)
        assert (await env.get("b.example.com")).backend == "q-1"
        assert await _reloads(env) == before


async def test_shared_backend_outlives_the_route_it_was_named_after(
    slow_reload_env: RouterEnv,
) -> None:
    env = slow_reload_env
    with backends("p-1") as (p1,):
        await env.apply(namespace("demo"), service("demo", "s"), endpoints("demo", "s", [p1]))
        await env.apply(
            route("demo", "x", "x.example.com", "s"),
            route("demo", "y", "y.example.com", "s"),
            route("demo", "z", "z.example.com", "s"),
        )
        await env.eventually(lambda: _synced_and_served(env, "z.example.com"))
        before = await _reloads(env)
        # x named the shared backend; y and z move to y's name, served by a spare at once.
        await env.delete(Route, "demo", "x")
        await _until(env, "x.example.com", 503)
        for host in ("y.example.com", "z.example.com"):
            assert (await env.get(host)).backend == "p-1"
        assert env.router.driver.aliases == {"be_http:demo:y": "be_spare_http:0"}
        assert await _reloads(env) == before
        await env.router.driver.flush()  # the owed reload renders y's backend for both
        assert env.router.driver.aliases == {}
        for host in ("y.example.com", "z.example.com"):
            assert (await env.get(host)).backend == "p-1"
