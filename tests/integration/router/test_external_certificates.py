"""Routes whose certificate comes from a Secret (``spec.tls.externalCertificate``), on a real
HAProxy: presented by SNI, rotated without a reload under a running client, and a hostile
Secret that never touches the other routes.

RELOAD_INTERVAL is 60 s, so a reload cannot hide inside a test: the driver's and the
HAProxy master's reload counters must stay where they were.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.backends import backends
from tests.support.router import (
    RouterEnv,
    endpoints,
    namespace,
    request,
    route,
    service,
    sha256_of_pem,
)
from tests.support.tls import KeyPair, TestCA

from shiftnet.api import Secret
from shiftnet.api.secret import TLS

pytestmark = pytest.mark.integration

CA = TestCA()


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[RouterEnv]:
    e = RouterEnv(tmp_path, extra_env={"RELOAD_INTERVAL": "60", "ROUTER_SPARE_BACKENDS": "4"})
    try:
        await e.start()
        yield e
    finally:
        await e.stop()


def tls_secret(ns: str, name: str, pair: KeyPair, *, kind: str = TLS) -> Secret:
    return Secret.model_validate(
        {
            "metadata": {"name": name, "namespace": ns},
            "type": kind,
            "stringData": {"tls.crt": pair.cert_pem, "tls.key": pair.key_pem},
        }
    )


def external(ns: str, name: str, host: str, secret: str, termination: str = "edge") -> object:
    tls = {"termination": termination, "externalCertificate": {"name": secret}}
    return route(ns, name, host, "web", tls=tls)


async def presented(env: RouterEnv, host: str) -> bytes | None:
    return (await env.get_tls(host)).cert_sha256


async def reloads(env: RouterEnv) -> tuple[int, int]:
    master = (await env.router.driver.process.wait_status(5)).reloads
    return env.router.driver.reloads, master


async def admitted(env: RouterEnv, name: str) -> tuple[str, str | None, str | None]:
    """The route's Admitted condition from this router, once it has written one."""

    async def condition() -> tuple[str, str | None, str | None] | None:
        entry = await env.ingress("demo", name)
        if entry is None or not entry.conditions:
            return None
        c = entry.conditions[0]
        return c.status, c.reason, c.message

    found: tuple[str, str | None, str | None] = await env.eventually(condition)
    return found


async def serving(env: RouterEnv) -> None:
    await env.apply(namespace("demo"), service("demo", "web"))


class SteadyClient:
    """TLS requests to one host in a loop on a thread until stopped (at most 60 s)."""

    def __init__(self, port: int, host: str) -> None:
        self.port, self.host = port, host
        self.ok = 0
        self.failed: list[str] = []
        self.seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + 60
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                reply = request(self.port, self.host, tls=True, timeout=5)
            except OSError as err:
                self.failed.append(repr(err))
                continue
            if reply.status != 200:
                self.failed.append(f"status {reply.status}")
            else:
                self.ok += 1
                if reply.cert_sha256:
                    self.seen.add(reply.cert_sha256)

    def __enter__(self) -> SteadyClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


async def test_edge_and_reencrypt_routes_present_their_secrets_certificate_by_sni(
    env: RouterEnv,
) -> None:
    with backends("web-1") as (pod,):
        await serving(env)
        await env.apply(endpoints("demo", "web", [pod]))
        edge, reencrypt = CA.issue("e.example.com"), CA.issue("r.example.com")
        await env.apply(
            tls_secret("demo", "edge-tls", edge), tls_secret("demo", "re-tls", reencrypt)
        )
        await env.apply(
            external("demo", "edge", "e.example.com", "edge-tls"),
            external("demo", "re", "r.example.com", "re-tls", termination="reencrypt"),
        )
        await env.eventually(lambda: _admitted_true(env, "edge"))
        assert await admitted(env, "edge") == ("True", None, None)
        assert await admitted(env, "re") == ("True", None, None)
        reply = await env.get_tls("e.example.com")
        assert (reply.status, reply.backend) == (200, "web-1")
        assert reply.cert_sha256 == sha256_of_pem(edge.cert_pem)
        assert await presented(env, "r.example.com") == sha256_of_pem(reencrypt.cert_pem)
        # Written to disk as the route's certificate file, private to the router.
        cert_file = env.work_dir / "conf" / "certs" / "demo,edge.pem"
        assert cert_file.stat().st_mode & 0o777 == 0o600
        assert b"PRIVATE KEY" in cert_file.read_bytes()


async def test_rotating_the_secret_is_served_within_a_second_with_no_reload_and_no_failure(
    env: RouterEnv,
) -> None:
    with backends("web-1") as (pod,):
        await serving(env)
        await env.apply(endpoints("demo", "web", [pod]))
        first = CA.issue("e.example.com")
        first_sha = sha256_of_pem(first.cert_pem)
        await env.apply(tls_secret("demo", "edge-tls", first))
        await env.apply(external("demo", "edge", "e.example.com", "edge-tls"))
        await env.router.sync_now()
        await env.eventually(lambda: _is(presented(env, "e.example.com"), first_sha))
        await env.router.driver.flush()
        before = await reloads(env)
        pairs = [CA.issue("e.example.com") for _ in range(3)]
        with SteadyClient(env.https_port, "e.example.com") as client:
            for pair in pairs:
                await env.apply(tls_secret("demo", "edge-tls", pair))
                t0 = time.monotonic()
                want = sha256_of_pem(pair.cert_pem)
                await env.eventually(lambda w=want: _is(presented(env, "e.example.com"), w))
                assert time.monotonic() - t0 < 1.0
            await asyncio.sleep(0.3)
        assert client.failed == [] and client.ok > 10
        assert {sha256_of_pem(p.cert_pem) for p in pairs} <= client.seen
        assert await reloads(env) == before
        # The files on disk hold the last certificate: a reload or restart serves it too.
        on_disk = (env.work_dir / "conf" / "certs" / "demo,edge.pem").read_text()
        assert sha256_of_pem(on_disk) == sha256_of_pem(pairs[-1].cert_pem)
        await env.router.driver.process.reload()
        assert await presented(env, "e.example.com") == sha256_of_pem(pairs[-1].cert_pem)


async def test_an_inline_certificate_that_changes_is_served_with_no_reload(env: RouterEnv) -> None:
    with backends("web-1") as (pod,):
        await serving(env)
        await env.apply(endpoints("demo", "web", [pod]))
        one, two = CA.issue("i.example.com"), CA.issue("i.example.com")
        one_sha = sha256_of_pem(one.cert_pem)

        def inline(pair: KeyPair) -> object:
            tls = {"termination": "edge", "certificate": pair.cert_pem, "key": pair.key_pem}
            return route("demo", "inline", "i.example.com", "web", tls=tls)

        await env.apply(inline(one))
        await env.router.sync_now()
        await env.eventually(lambda: _is(presented(env, "i.example.com"), one_sha))
        await env.router.driver.flush()
        before = await reloads(env)
        with SteadyClient(env.https_port, "i.example.com") as client:
            await env.apply(inline(two))
            t0 = time.monotonic()
            want = sha256_of_pem(two.cert_pem)
            await env.eventually(lambda: _is(presented(env, "i.example.com"), want))
            assert time.monotonic() - t0 < 1.0
            await asyncio.sleep(0.3)
        assert client.failed == [] and client.ok > 5
        assert await reloads(env) == before


async def test_hostile_secrets_refuse_their_own_route_and_nothing_else(env: RouterEnv) -> None:
    with backends("web-1") as (pod,):
        await serving(env)
        await env.apply(endpoints("demo", "web", [pod]))
        good = CA.issue("good.example.com")
        await env.apply(tls_secret("demo", "good-tls", good))
        await env.apply(external("demo", "good", "good.example.com", "good-tls"))
        good_sha = sha256_of_pem(good.cert_pem)
        await env.eventually(lambda: _is(presented(env, "good.example.com"), good_sha))

        opaque = tls_secret("demo", "opaque", CA.issue("o.example.com"), kind="Opaque")
        await env.apply(opaque)
        bad_pem = Secret.model_validate(
            {
                "metadata": {"name": "bad-pem", "namespace": "demo"},
                "type": TLS,
                "stringData": {
                    "tls.crt": "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n",
                    "tls.key": good.key_pem,
                },
            }
        )
        await env.apply(bad_pem)
        # More than Kubernetes allows, written around the API's validation (straight to
        # the store), as a compromised or foreign writer could.
        huge = tls_secret("demo", "huge", CA.issue("h.example.com"))
        huge.data["padding"] = "QUFB" * (1024 * 1024 // 3 + 10)
        await env.store.create(Secret.RESOURCE, huge.to_dict())
        with SteadyClient(env.https_port, "good.example.com") as client:
            await env.apply(
                external("demo", "missing", "m.example.com", "no-such-secret"),
                external("demo", "wrongtype", "w.example.com", "opaque"),
                external("demo", "badpem", "b.example.com", "bad-pem"),
                external("demo", "toobig", "t.example.com", "huge"),
            )
            await env.router.sync_now()
            await asyncio.sleep(0.3)
        assert client.failed == [] and client.ok > 0
        assert await admitted(env, "missing") == (
            "False",
            "ExternalCertificateValidationFailed",
            'spec.tls.externalCertificate: Not found: "secrets \\"no-such-secret\\" not found"',
        )
        assert await admitted(env, "wrongtype") == (
            "False",
            "ExternalCertificateValidationFailed",
            'spec.tls.externalCertificate: Invalid value: "opaque": '
            'secret of type "kubernetes.io/tls" required',
        )
        status, reason, message = await admitted(env, "badpem")
        assert (status, reason) == ("False", "ExtendedValidationFailed")
        assert message and message.startswith(
            'spec.tls.externalCertificate: secret "bad-pem" data[tls.crt]:'
        )
        status, reason, message = await admitted(env, "toobig")
        assert (status, reason) == ("False", "ExternalCertificateValidationFailed")
        assert "1048576 bytes" in (message or "")
        # Refused routes are not served: their hosts get the default certificate.
        assert await presented(env, "m.example.com") != sha256_of_pem(good.cert_pem)
        assert await presented(env, "good.example.com") == sha256_of_pem(good.cert_pem)
        assert (await env.get_tls("good.example.com")).status == 200

        # The Secret appears: the route is admitted and served, without a reload.
        before = await reloads(env)
        late = CA.issue("m.example.com")
        await env.apply(tls_secret("demo", "no-such-secret", late))
        want = sha256_of_pem(late.cert_pem)
        await env.eventually(lambda: _is(presented(env, "m.example.com"), want))
        assert await env.eventually(lambda: _admitted_true(env, "missing"))
        assert await reloads(env) == before


async def _is(value: object, want: bytes) -> bool:
    return await value == want  # type: ignore[misc]


async def _admitted_true(env: RouterEnv, name: str) -> bool:
    return (await admitted(env, name))[0] == "True"


async def test_a_deleted_secret_takes_its_route_out_and_a_new_one_brings_it_back(
    env: RouterEnv,
) -> None:
    with backends("web-1") as (pod,):
        await serving(env)
        await env.apply(endpoints("demo", "web", [pod]))
        pair = CA.issue("e.example.com")
        sha = sha256_of_pem(pair.cert_pem)
        await env.apply(tls_secret("demo", "edge-tls", pair))
        await env.apply(external("demo", "edge", "e.example.com", "edge-tls"))
        await env.eventually(lambda: _is(presented(env, "e.example.com"), sha))
        await env.router.driver.flush()
        before = await reloads(env)
        await env.delete(Secret, "demo", "edge-tls")
        await env.eventually(lambda: _status_is(env, "e.example.com", 503))
        assert await presented(env, "e.example.com") != sha
        assert await env.eventually(
            lambda: _reason_is(env, "edge", "ExternalCertificateValidationFailed")
        )
        again = CA.issue("e.example.com")
        await env.apply(tls_secret("demo", "edge-tls", again))
        await env.eventually(
            lambda: _is(presented(env, "e.example.com"), sha256_of_pem(again.cert_pem))
        )
        assert (await env.get_tls("e.example.com")).status == 200
        assert await env.eventually(lambda: _admitted_true(env, "edge"))
        assert await reloads(env) == before


async def _status_is(env: RouterEnv, host: str, status: int) -> bool:
    return (await env.get_tls(host)).status == status


async def _reason_is(env: RouterEnv, name: str, reason: str) -> bool:
    return (await admitted(env, name))[1] == reason
