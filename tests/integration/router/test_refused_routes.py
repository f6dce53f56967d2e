"""One tenant's route that HAProxy refuses never stops the router for the others.

The route used is one validation accepts and HAProxy does not: a certificate
with a 1024-bit RSA key, which the system's OpenSSL security level refuses to
load (validation does not judge key sizes, which depend on the machine). With
it in the store, a new route in another namespace is served at once, a
deleted route stops being served, the refused route says why on its status,
and a router restarted from scratch with it still in the store starts and
serves the others.
"""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.support.backends import backends
from tests.support.pem import issue
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.api import Route

pytestmark = pytest.mark.integration

SERVE_WITHIN = 10.0  # seconds; the defect kept a new route at 503 for over a minute


def weak_rsa_route(ns: str, name: str, host: str, svc: str) -> Route:
    """An edge route whose certificate HAProxy cannot load (RSA 1024) but validation accepts."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    leaf = issue(host, key=key)
    tls = {"termination": "edge", "certificate": leaf.cert_pem, "key": leaf.key_pem}
    return route(ns, name, host, svc, tls=tls)


async def _status(env: RouterEnv, host: str) -> int:
    return (await env.get(host)).status


async def _served_by(env: RouterEnv, host: str, pod: str) -> bool:
    r = await env.get(host)
    return r.status == 200 and r.backend == pod


async def _refused_on_status(env: RouterEnv, ns: str, name: str) -> object:
    entry = await env.ingress(ns, name)
    if entry is None or entry.conditions[0].status != "False":
        return None
    return entry.conditions[0]


async def test_a_route_haproxy_refuses_is_left_out_and_the_rest_served(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = RouterEnv(tmp_path)
    try:
        with backends("good-1", "new-1") as (good, new):
            await env.start()
            for ns, svc, pod in (("team-a", "good", good), ("team-c", "new", new)):
                await env.apply(namespace(ns), service(ns, svc), endpoints(ns, svc, [pod]))
            await env.apply(route("team-a", "good", "good.example.com", "good"))
            await env.eventually(lambda: _served_by(env, "good.example.com", "good-1"))

            await env.apply(namespace("team-b"), service("team-b", "bad"))
            await env.apply(weak_rsa_route("team-b", "bad", "bad.example.com", "bad"))
            condition = await env.eventually(
                lambda: _refused_on_status(env, "team-b", "bad"), timeout=SERVE_WITHIN
            )
            assert condition.reason == "ExtendedValidationFailed"  # type: ignore[attr-defined]
            assert "HAProxy refused it" in condition.message  # type: ignore[attr-defined]
            message = condition.message  # type: ignore[attr-defined]
            assert "certs/team-b,bad.pem" in message and "/tmp" not in message, message

            # Another tenant's new route is served, quickly.
            t0 = time.monotonic()
            await env.apply(route("team-c", "new", "new.example.com", "new"))
            await env.eventually(
                lambda: _served_by(env, "new.example.com", "new-1"), timeout=SERVE_WITHIN
            )
            assert time.monotonic() - t0 < SERVE_WITHIN
            # A deleted route stops being served.
            await env.delete(Route, "team-a", "good")
            await env.eventually(
                lambda: _when_status(env, "good.example.com", 503), timeout=SERVE_WITHIN
            )
            assert env.router.skipped.keys() == {("team-b", "bad")}
            assert env.router.driver.process.alive()

            # The bad route changes (a usable certificate): it is tried again and served.
            fixed = issue("bad.example.com")
            await env.apply(
                route(
                    "team-b",
                    "bad",
                    "bad.example.com",
                    "bad",
                    tls={
                        "termination": "edge",
                        "certificate": fixed.cert_pem,
                        "key": fixed.key_pem,
                    },
                )
            )
            await env.eventually(lambda: _admitted(env, "team-b", "bad"), timeout=SERVE_WITHIN)
            assert env.router.skipped == {}
    finally:
        await env.stop()


async def test_router_starts_with_a_refused_route_in_the_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = RouterEnv(tmp_path)
    try:
        with backends("a-1", "c-1") as (a, c):
            for ns, svc, pod in (("team-a", "a", a), ("team-c", "c", c)):
                await env.apply(namespace(ns), service(ns, svc), endpoints(ns, svc, [pod]))
                await env.apply(route(ns, svc, f"{svc}.example.com", svc))
            await env.apply(namespace("team-b"), service("team-b", "bad"))
            await env.apply(weak_rsa_route("team-b", "bad", "bad.example.com", "bad"))

            await env.start()  # used to raise "HAProxy configuration ... is invalid"
            assert await _served_by(env, "a.example.com", "a-1")
            assert await _served_by(env, "c.example.com", "c-1")
            assert env.router.skipped.keys() == {("team-b", "bad")}
            assert await env.eventually(lambda: _refused_on_status(env, "team-b", "bad"))

            # A full restart (HAProxy stopped too) with the bad route still stored.
            await env.router.stop()
            assert not env.router.driver.process.alive()
            await env.start()
            assert await _served_by(env, "a.example.com", "a-1")
            assert await _served_by(env, "c.example.com", "c-1")
            assert env.router.skipped.keys() == {("team-b", "bad")}
            # Bounded: a handful of haproxy -c runs for one bad route among three.
            assert 0 < env.router.refusals.checks <= 8, env.router.refusals.checks
    finally:
        await env.stop()


async def _when_status(env: RouterEnv, host: str, status: int) -> bool:
    return await _status(env, host) == status


async def _admitted(env: RouterEnv, ns: str, name: str) -> bool:
    entry = await env.ingress(ns, name)
    return entry is not None and entry.conditions[0].status == "True"
