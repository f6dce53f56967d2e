"""Runtime certificate changes HAProxy refuses, on a real HAProxy, while the good routes
answer a running client. RELOAD_INTERVAL is 60 s: nothing reloads unless the test flushes.

* A batch refused partway: the commands before the refused one are served, so the
  driver must not go on from its old picture of HAProxy. A served edge route moves
  to a new host with a new certificate while an operator holds a ``set ssl cert``
  transaction on another certificate: ``del ssl crt-list`` goes through, the route's
  ``set ssl cert`` is refused. The update is then put back (the files HAProxy
  loaded), yet HAProxy lacks the route's line: the owed reload must still run.
* A certificate OpenSSL will not load (RSA 1024) is never sent: HAProxy would
  refuse its commit, and a refused commit breaks TLS connections of other routes
  (an empty answer after the handshake); the change waits for the checked reload,
  which leaves the route out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.support.backends import backends
from tests.support.hostile_router import GOOD_PODS, Client, good_routes
from tests.support.pem import Issued, issue
from tests.support.router import (
    RouterEnv,
    endpoints,
    namespace,
    route,
    service,
    sha256_of_pem,
)

from shiftnet.api import Route
from shiftnet.router import metrics
from shiftnet.router.haproxy import commands

pytestmark = pytest.mark.integration

NS = "tenant"
OWN = issue("w1.example.com")
OTHER = issue("w2.example.com")
WEAK = issue("w1.example.com", key=rsa.generate_private_key(65537, 1024))  # HAProxy refuses
GOOD_CERT = "certs/good-b,secure.pem"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[RouterEnv]:
    e = RouterEnv(tmp_path, extra_env={"RELOAD_INTERVAL": "60"})
    try:
        yield e
    finally:
        await e.stop()


def _edge(host: str, pair: Issued) -> Route:
    tls = {"termination": "edge", "certificate": pair.cert_pem, "key": pair.key_pem}
    return route(NS, "w", host, "w", tls=tls)


def _fallbacks(reason: str) -> float:
    name = "shiftnet_router_runtime_fallbacks_total"
    return metrics.REGISTRY.get_sample_value(name, {"reason": reason}) or 0.0


async def _presents_own(env: RouterEnv) -> bool:
    r = await env.get_tls("w1.example.com")
    return (r.status, r.backend, r.cert_sha256) == (200, "w-1", sha256_of_pem(OWN.cert_pem))


async def _status_host(env: RouterEnv, host: str) -> bool:
    entry = await env.ingress(NS, "w")
    return entry is not None and entry.host == host


async def _serve_w(env: RouterEnv) -> None:
    """The good routes and route ``w`` on w1 with OWN, after a reload: nothing owed."""
    await env.apply(namespace(NS), service(NS, "w"))
    await env.apply(_edge("w1.example.com", OWN))
    await env.eventually(lambda: _presents_own(env))
    await env.router.sync_now()  # reloads: HAProxy serves exactly the files on disk
    assert env.router.driver.aliases == {} and await _presents_own(env)


async def test_a_partly_refused_batch_is_reloaded_even_when_the_change_is_undone(
    env: RouterEnv,
) -> None:
    with backends(*GOOD_PODS, "w-1") as (web, secure, w):
        await env.start()
        await good_routes(env, web, secure)
        await env.apply(endpoints(NS, "w", [w]))
        await _serve_w(env)
        driver = env.router.driver
        reloads = driver.reloads
        held = (driver.process.conf_dir / GOOD_CERT).read_bytes()
        await driver.runtime.ssl(commands.set_ssl_cert(GOOD_CERT, held))  # never committed

        with Client(env) as client:
            refused = _fallbacks("refused")
            await env.apply(_edge("w2.example.com", OTHER))
            await env.eventually(lambda: _status_host(env, "w2.example.com"))
            assert _fallbacks("refused") == refused + 1  # the line deleted, the new cert refused
            assert driver.reloads == reloads

            await env.apply(_edge("w1.example.com", OWN))  # undone: the files HAProxy loaded
            await env.eventually(lambda: _status_host(env, "w1.example.com"))
            # HAProxy lost the route's line: the default certificate answers until a reload.
            assert not await _presents_own(env)
            await driver.flush()  # the reload the refusal owes, without waiting RELOAD_INTERVAL
            await env.eventually(lambda: _presents_own(env), timeout=5)
            assert driver.reloads == reloads + 1
        assert client.failed == [], client.failed[:10]
        assert client.ok > 5, client.ok


async def test_a_certificate_openssl_will_not_load_is_never_sent(env: RouterEnv) -> None:
    with backends(*GOOD_PODS, "w-1") as (web, secure, w):
        await env.start()
        await good_routes(env, web, secure)
        await env.apply(endpoints(NS, "w", [w]))
        await _serve_w(env)
        driver = env.router.driver

        with Client(env) as client:
            refused, deferred = _fallbacks("refused"), _fallbacks("certificate")
            await env.apply(_edge("w1.example.com", WEAK))

            async def planned() -> bool:
                return _fallbacks("refused") + _fallbacks("certificate") > refused + deferred

            await env.eventually(planned)
            assert (_fallbacks("refused"), _fallbacks("certificate")) == (refused, deferred + 1)
            # Nothing was sent: no transaction left open, the old certificate still served.
            transactions = await driver.runtime.query("show ssl cert")
            assert "*" not in transactions, transactions
            assert await _presents_own(env)

            await env.router.sync_now()  # the checked reload: HAProxy refuses, the route is out
            assert "HAProxy refused" in env.router.skipped[(NS, "w")]
            assert (await env.ingress(NS, "w")).conditions[0].status == "False"
        assert client.failed == [], client.failed[:10]
        assert client.ok > 5, client.ok
