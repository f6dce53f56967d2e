"""A runtime batch HAProxy refuses partway, on a real HAProxy: the commands before the
refused one are served, so the driver must not go on from its old picture of HAProxy.

One Route update moves a served edge route to a new host with a certificate HAProxy
will not put in a TLS context (RSA 1024): ``del ssl crt-list`` and the certificate's
commit go through, ``add ssl crt-list`` is refused. The update is put back
before any reload: the files are then those HAProxy loaded, but HAProxy has lost the
line. The owed reload must still run and serve the route's certificate again, while
the good routes answer a running client. RELOAD_INTERVAL is 60 s, so nothing reloads
in between unless the test flushes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.support.backends import backends
from tests.support.hostile_router import GOOD_PODS, Client, good_routes
from tests.support.pem import issue
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

pytestmark = pytest.mark.integration

NS = "tenant"
OWN = issue("w1.example.com")
WEAK = issue("w2.example.com", key=rsa.generate_private_key(65537, 1024))  # HAProxy refuses


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[RouterEnv]:
    e = RouterEnv(tmp_path, extra_env={"RELOAD_INTERVAL": "60"})
    try:
        yield e
    finally:
        await e.stop()


def _edge(host: str, pair: object) -> Route:
    tls = {"termination": "edge", "certificate": pair.cert_pem, "key": pair.key_pem}  # type: ignore[attr-defined]
    return route(NS, "w", host, "w", tls=tls)


def _refusals() -> float:
    name = "shiftnet_router_runtime_fallbacks_total"
    return metrics.REGISTRY.get_sample_value(name, {"reason": "refused"}) or 0.0


async def test_a_partly_refused_batch_is_reloaded_even_when_the_change_is_undone(
    env: RouterEnv,
) -> None:
    with backends(*GOOD_PODS, "w-1") as (web, secure, w):
        await env.start()
        await good_routes(env, web, secure)
        await env.apply(namespace(NS), service(NS, "w"), endpoints(NS, "w", [w]))
        await env.apply(_edge("w1.example.com", OWN))
        own = sha256_of_pem(OWN.cert_pem)

        async def presents_own() -> bool:
            r = await env.get_tls("w1.example.com")
            return (r.status, r.backend, r.cert_sha256) == (200, "w-1", own)

        await env.eventually(presents_own)
        driver = env.router.driver
        await env.router.sync_now()  # reloads: HAProxy serves exactly the files on disk
        assert driver.aliases == {} and await presents_own()
        reloads = driver.reloads

        async def status_host(host: str) -> bool:
            entry = await env.ingress(NS, "w")
            return entry is not None and entry.host == host

        with Client(env) as client:
            refused = _refusals()
            await env.apply(_edge("w2.example.com", WEAK))
            await env.eventually(lambda: status_host("w2.example.com"))
            assert _refusals() == refused + 1  # the line deleted, its new one refused
            assert driver.reloads == reloads

            await env.apply(_edge("w1.example.com", OWN))  # undone: the files HAProxy loaded
            await env.eventually(lambda: status_host("w1.example.com"))
            # HAProxy lost the route's line: the default certificate answers until a reload.
            assert (await env.get_tls("w1.example.com")).cert_sha256 != own
            await driver.flush()  # the reload the refusal owes, without waiting RELOAD_INTERVAL
            await env.eventually(presents_own, timeout=5)
            assert driver.reloads == reloads + 1
        assert client.failed == [], client.failed[:10]
        assert client.ok > 5, client.ok
