"""A served route whose backend options change is served all along, by the old backend until
the reload brings the new options.

Why: the runtime API cannot add a backend or change a backend's options, so
a route whose options change waits for a reload for them. Meanwhile it must
keep being served as before (OpenShift's router serves the old backend until
its reload): a route that leaves a shared backend, or one a spare serves,
keeps its map entries on what served it. Reloads are held back here
(``RELOAD_INTERVAL`` 60 s) until the test flushes, so a route dropped in
between would show as failed requests of the running client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.backends import backends
from tests.support.hostile_router import Client
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.router.haproxy import identity
from shiftnet.router.haproxy.names import HTTP_PREFIX_MAP, TLS_PREFIX_MAP

pytestmark = pytest.mark.integration

HAPROXY = "haproxy.router.openshift.io/"
TIMEOUT = {HAPROXY + "timeout": "9s"}


@pytest.fixture
async def held_env(tmp_path: Path) -> AsyncIterator[RouterEnv]:
    env = RouterEnv(tmp_path, extra_env={"RELOAD_INTERVAL": "60", "ROUTER_SPARE_BACKENDS": "4"})
    try:
        await env.start()
        yield env
    finally:
        await env.stop()


def _section(cfg: str, backend: str) -> str:
    """One backend section of a written ``haproxy.cfg`` ("" when absent)."""
    head = f"\nbackend {backend} "
    start = cfg.find(head)
    if start < 0:
        return ""
    end = cfg.find("\nbackend ", start + len(head))
    return cfg[start : end if end >= 0 else len(cfg)]


async def _loaded_config(env: RouterEnv) -> str:
    """``haproxy.cfg`` on disk, checked to be the one HAProxy itself says it runs."""
    data = (env.work_dir / "conf" / "haproxy.cfg").read_bytes()
    running = (await env.router.driver.runtime.show_info()).get("description")
    assert running == identity.declared(data)
    return data.decode()


async def _change(env: RouterEnv, changed: Any, map_name: str, key: str) -> None:
    """Apply ``changed`` and wait until the router planned it; its key must still be served."""
    driver = env.router.driver
    before = driver.fallbacks  # the option change waits for a reload: counted as a fallback
    await env.apply(changed)

    async def planned() -> bool:
        return driver.fallbacks > before

    await env.eventually(planned)
    running = await driver.runtime.show_map(map_name)
    assert key in running, f"{key} left the running {map_name} ({sorted(running)})"
    await asyncio.sleep(0.3)  # the client keeps asking meanwhile


async def test_option_changes_of_served_routes_lose_no_request(held_env: RouterEnv) -> None:
    env = held_env
    driver = env.router.driver
    with backends("p-1", "e-1", "n-1", "u-1") as (p1, e1, n1, u1):
        await env.apply(namespace("demo"))
        for svc, pod in (("s", p1), ("es", e1), ("ns", n1), ("us", u1)):
            await env.apply(service("demo", svc), endpoints("demo", svc, [pod]))
        shared = ("a", "b", "c", "d", "f", "g")  # one pod: one shared backend, named after a
        for name in shared:
            await env.apply(route("demo", name, f"{name}.example.com", "s"))
        edge = {"termination": "edge"}
        for name in ("ea", "eb"):
            await env.apply(route("demo", name, f"{name}.example.com", "es", tls=edge))
        await env.apply(route("demo", "solo", "solo.example.com", "us"))  # a backend of its own
        await env.eventually(lambda: _served(env, "solo.example.com"))
        await env.router.sync_now()  # loaded: every route on its (group's) backend
        cfg = await _loaded_config(env)
        assert _section(cfg, "be_http:demo:a") and not _section(cfg, "be_http:demo:b")
        assert _section(cfg, "be_edge_http:demo:ea") and not _section(cfg, "be_edge_http:demo:eb")
        # A route created now is served by a spare until the next reload.
        await env.apply(route("demo", "n", "n.example.com", "ns"))
        await env.eventually(lambda: _served(env, "n.example.com"))
        assert driver.aliases == {"be_http:demo:n": "be_spare_http:0"}
        reloads = driver.reloads

        targets = [(f"{n}.example.com", False, "p-1") for n in shared]
        targets += [("ea.example.com", True, "e-1"), ("eb.example.com", True, "e-1")]
        targets += [("n.example.com", False, "n-1"), ("solo.example.com", False, "u-1")]
        with Client(env, targets) as client:
            # Routes leaving the shared backend for options no spare has.
            for name, annotations in (
                ("b", TIMEOUT),
                ("c", {HAPROXY + "rewrite-target": "/rewritten"}),
                ("d", {"router.openshift.io/cookie_name": "sticky-d"}),
                ("f", {HAPROXY + "balance": "leastconn"}),
            ):
                changed = route("demo", name, f"{name}.example.com", "s", annotations=annotations)
                await _change(env, changed, HTTP_PREFIX_MAP, f"{name}.example.com/")
            allow = {"termination": "edge", "insecureEdgeTerminationPolicy": "Allow"}
            changed = route("demo", "eb", "eb.example.com", "es", tls=allow)
            await _change(env, changed, TLS_PREFIX_MAP, "eb.example.com/")
            # The route a spare serves.
            changed = route("demo", "n", "n.example.com", "ns", annotations=TIMEOUT)
            await _change(env, changed, HTTP_PREFIX_MAP, "n.example.com/")
            assert driver.reloads == reloads  # all of it served without a reload so far

            await driver.flush()  # the reload the changes owe
            assert driver.reloads == reloads + 1 and driver.aliases == {}
            cfg = await _loaded_config(env)
            assert "timeout server 9s" in _section(cfg, "be_http:demo:b")
            assert "timeout server 9s" in _section(cfg, "be_http:demo:n")
            assert "balance leastconn" in _section(cfg, "be_http:demo:f")
            seen = (await env.get("c.example.com", "/x")).headers.get("x-seen-path")
            assert seen == "/rewritten/x"
            cookie = (await env.get("d.example.com")).headers.get("set-cookie", "")
            assert cookie.startswith("sticky-d=")
            plain = await env.get("eb.example.com")  # Allow: served on the HTTP port too
            assert (plain.status, plain.backend) == (200, "e-1")

            # The route that names the shared backend, and a route alone: both are loaded
            # under their own names with other options, so the whole change waits for the
            # reload while the loaded configuration keeps serving them.
            for name, svc in (("a", "s"), ("solo", "us")):
                changed = route("demo", name, f"{name}.example.com", svc, annotations=TIMEOUT)
                await _change(env, changed, HTTP_PREFIX_MAP, f"{name}.example.com/")
            await driver.flush()
            cfg = await _loaded_config(env)
            assert "timeout server 9s" in _section(cfg, "be_http:demo:a")
            assert "timeout server 9s" in _section(cfg, "be_http:demo:solo")
            await asyncio.sleep(0.3)
        assert client.failed == [], client.failed[:10]
        assert client.ok > 100


async def _served(env: RouterEnv, host: str) -> bool:
    return (await env.get(host)).status == 200
