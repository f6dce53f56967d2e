"""Hostile TLS Secrets and Ingresses cannot disturb other tenants' routes, nor a restart.

The two ways TLS material and routes reach HAProxy without being written in a
Route by hand:

* Secrets named by ``spec.tls.externalCertificate``: every PEM oddity of
  ``tests/support/hostile.pem_cases`` as the Secret's ``tls.crt``/``tls.key``
  (and ``ca.crt``, which the router does not read), values that are not
  UTF-8 or not base64, and a certificate HAProxy refuses though validation
  accepts it; both for new routes and as the replacement of a served route's
  Secret (the runtime API's certificate path);
* Ingresses, turned into Routes by the master's real ingress-to-route
  controller running on the router's store: every PEM oddity through the
  Ingress's TLS Secret and through the Secret named by
  ``route.openshift.io/destination-ca-certificate-secret``, and hostile hosts,
  paths, path types, TLS secret names, backend service names and ports, and
  annotations (copied to the Route), each through the API, or into the store
  around it when the API refuses (as a foreign writer could).

While they are applied the good routes serve under a running client: 0 failed
requests; every route gets the router's answer (admitted, or not with a
reason); only the certificates HAProxy refuses are left out by bisection; and
a router restarted from scratch with all of it in the store serves again.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.support.backends import backends
from tests.support.hostile import (
    ANNOTATION_KEYS,
    FIXED_HOSTILE,
    HOSTILE_HOSTS,
    HOSTILE_PATHS,
    HOSTILE_SERVICE_NAMES,
    NEAR_MISSES,
    pem_cases,
)
from tests.support.hostile_router import (
    GOOD_PODS,
    Client,
    every_route_answered,
    good_routes,
    good_served,
)
from tests.support.pem import ec_key, issue, key_pem
from tests.support.router import RouterEnv, endpoints, namespace, service

from shiftnet.api import Ingress, Route, Secret, parse_object
from shiftnet.errors import ShiftnetError
from shiftnet.informer import Informers
from shiftnet.master.ingress import IngressToRouteController
from shiftnet.master.ingress_model import DESTINATION_CA_ANNOTATION, TERMINATION_ANNOTATION

pytestmark = pytest.mark.integration

SEC = "evil-secrets"  # routes naming Secrets
ING = "evil-ingress"  # Ingresses
BATCH = 25
CA = issue("hostile CA", ca=True)
LEAF = issue("evil.example.com", issuer=CA)
WEAK = issue("weak.example.com", key=rsa.generate_private_key(65537, 1024))  # HAProxy refuses


def _cases() -> list[dict[str, str]]:
    return [
        c.tls
        for c in pem_cases(LEAF.cert_pem, LEAF.key_pem, CA.cert_pem, key_pem(ec_key()), LEAF.key)
    ]


def _secret(
    ns: str, name: str, values: dict[str, str], kind: str = "kubernetes.io/tls"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": kind,
        "stringData": {k: v for k, v in values.items() if v},
    }


def _raw_secret(ns: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    """A Secret with ``data`` as given (base64 or not): only a foreign writer stores it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": "kubernetes.io/tls",
        "data": data,
    }


def secret_objects() -> Iterator[dict[str, Any]]:
    """Secrets and the routes that name them, in namespace SEC."""
    for i, case in enumerate(_cases()):
        values = {
            "tls.crt": case["certificate"],
            "tls.key": case["key"],
            "ca.crt": case["caCertificate"],
        }
        yield _secret(SEC, f"x{i}", values)
        tls = {"termination": "edge", "externalCertificate": {"name": f"x{i}"}}
        if case["caCertificate"]:
            tls["caCertificate"] = case["caCertificate"]
        yield _route(SEC, f"x{i}", f"x{i}.s.evil.example.com", "evil", tls=tls)
        tls = {"termination": "reencrypt", "externalCertificate": {"name": f"x{i}"}}
        yield _route(SEC, f"r{i}", f"r{i}.s.evil.example.com", "evil", tls=tls)
    not_utf8 = base64.b64encode(b"\xff\xfe-----BEGIN CERTIFICATE-----\n\x80\n").decode()
    good_key = base64.b64encode(LEAF.key_pem.encode()).decode()
    odd_data = {
        "latin1": {"tls.crt": not_utf8, "tls.key": good_key},
        "notb64": {"tls.crt": "%%%not base64", "tls.key": good_key},
        "empty": {"tls.crt": "", "tls.key": ""},
    }
    for name, data in odd_data.items():
        yield _raw_secret(SEC, name, data)
        tls = {"termination": "edge", "externalCertificate": {"name": name}}
        yield _route(SEC, name, f"{name}.s.evil.example.com", "evil", tls=tls)
    yield _secret(SEC, "weak", {"tls.crt": WEAK.cert_pem, "tls.key": WEAK.key_pem})
    tls = {"termination": "edge", "externalCertificate": {"name": "weak"}}
    yield _route(SEC, "weak", "weak.s.evil.example.com", "evil", tls=tls)


def rotated_secrets() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Routes ``u*`` served with good Secrets first, and those Secrets replaced by every
    PEM oddity and the weak certificate: the runtime API's certificate path."""
    cases = [{"tls.crt": c["certificate"], "tls.key": c["key"]} for c in _cases()]
    cases.append({"tls.crt": WEAK.cert_pem, "tls.key": WEAK.key_pem})
    first: list[dict[str, Any]] = []
    then: list[dict[str, Any]] = []
    for i, values in enumerate(cases):
        first.append(_secret(SEC, f"u{i}", {"tls.crt": LEAF.cert_pem, "tls.key": LEAF.key_pem}))
        tls = {"termination": "edge", "externalCertificate": {"name": f"u{i}"}}
        first.append(_route(SEC, f"u{i}", f"u{i}.s.evil.example.com", "evil", tls=tls))
        then.append(_secret(SEC, f"u{i}", values))
    return first, then


async def _replace(env: RouterEnv, bodies: list[dict[str, Any]]) -> None:
    """Each Secret replaced through the API, or in the store around it when the API refuses."""
    for body in bodies:
        obj = parse_object(body)
        current = await env.client.get(type(obj), obj.metadata.namespace, obj.metadata.name)
        obj.metadata.resource_version = current.metadata.resource_version
        try:
            await env.client.update(obj)
        except ShiftnetError:
            await env.store.update(Secret.RESOURCE, obj.to_dict())


def _route(ns: str, name: str, host: str, svc: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"host": host, "to": {"kind": "Service", "name": svc}, **spec},
    }


def _ingress(
    name: str,
    host: str,
    *,
    path: str = "/",
    path_type: str = "Prefix",
    backend: dict[str, Any] | None = None,
    tls: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    http_path = {
        "path": path,
        "pathType": path_type,
        "backend": {"service": backend or {"name": "web", "port": {"number": 80}}},
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": ING, "annotations": annotations or {}},
        "spec": {
            "tls": tls or [],
            "rules": [{"host": host, "http": {"paths": [http_path]}}],
        },
    }


def ingress_objects() -> Iterator[dict[str, Any]]:
    """Secrets and Ingresses in namespace ING, whose Routes the master writes."""
    yield _secret(ING, "good", {"tls.crt": LEAF.cert_pem, "tls.key": LEAF.key_pem})
    yield _ingress("ok", "ok.i.evil.example.com")
    for i, case in enumerate(_cases()):
        yield _secret(ING, f"t{i}", {"tls.crt": case["certificate"], "tls.key": case["key"]})
        host = f"t{i}.i.evil.example.com"
        yield _ingress(f"t{i}", host, tls=[{"hosts": [host], "secretName": f"t{i}"}])
        ca = case["caCertificate"] or case["certificate"]
        yield _secret(ING, f"d{i}", {"tls.crt": ca}, kind="Opaque")
        host = f"d{i}.i.evil.example.com"
        notes = {TERMINATION_ANNOTATION: "reencrypt", DESTINATION_CA_ANNOTATION: f"d{i}"}
        tls = [{"hosts": [host], "secretName": "good"}]
        yield _ingress(f"d{i}", host, tls=tls, annotations=notes)
    yield _secret(ING, "weak", {"tls.crt": WEAK.cert_pem, "tls.key": WEAK.key_pem})
    host = "weak.i.evil.example.com"
    yield _ingress("weak", host, tls=[{"hosts": [host], "secretName": "weak"}])
    n = 0
    for host in HOSTILE_HOSTS + FIXED_HOSTILE[:6]:
        n += 1
        yield _ingress(f"h{n}", host)
        yield _ingress(f"hs{n}", host, tls=[{"hosts": [host], "secretName": "good"}])
    for path in HOSTILE_PATHS + FIXED_HOSTILE[:6]:
        for path_type in ("Prefix", "ImplementationSpecific", "Exact", "x"):
            n += 1
            yield _ingress(f"p{n}", f"p{n}.i.evil.example.com", path=path, path_type=path_type)
    for bad in [*FIXED_HOSTILE[:8], "", "a" * 300]:
        n += 1
        host = f"s{n}.i.evil.example.com"
        yield _ingress(f"s{n}", host, tls=[{"hosts": [host], "secretName": bad}])
    ports: list[dict[str, Any]] = [
        {"number": 0},
        {"number": 65536},
        {"number": -1},
        {"number": 81},
        {"name": "nope"},
        {"name": "%[src]"},
        {"name": "http", "number": 80},
        {},
    ]
    for svc in HOSTILE_SERVICE_NAMES + FIXED_HOSTILE[:6]:
        n += 1
        backend = {"name": svc, "port": {"number": 80}}
        yield _ingress(f"b{n}", f"b{n}.i.evil.example.com", backend=backend)
    for port in ports:
        n += 1
        backend = {"name": "web", "port": port}
        yield _ingress(f"b{n}", f"b{n}.i.evil.example.com", backend=backend)
    for key in ANNOTATION_KEYS:
        for value in NEAR_MISSES.get(key, []) + FIXED_HOSTILE[:4]:
            n += 1
            yield _ingress(f"a{n}", f"a{n}.i.evil.example.com", annotations={key: value})
    for value in ("", "Edge", "passthrough", "reencrypt\n", "%[src]"):
        n += 1
        host = f"a{n}.i.evil.example.com"
        notes = {TERMINATION_ANNOTATION: value, DESTINATION_CA_ANNOTATION: value}
        yield _ingress(
            f"a{n}", host, tls=[{"hosts": [host], "secretName": "good"}], annotations=notes
        )


async def _apply(env: RouterEnv, bodies: Iterator[dict[str, Any]]) -> dict[str, int]:
    """Each body through the API, or into the store around it when the API refuses."""
    counts = {"through_api": 0, "around_api": 0}
    for batch, body in enumerate(bodies, 1):
        try:
            await env.client.create(parse_object(body))
            counts["through_api"] += 1
        except (ShiftnetError, ValueError) as err:
            assert "Traceback" not in str(err)
            resource = {"Secret": Secret, "Route": Route, "Ingress": Ingress}[body["kind"]].RESOURCE
            try:
                await env.store.create(resource, body)
                counts["around_api"] += 1
            except ShiftnetError:
                counts["refused_by_store"] = counts.get("refused_by_store", 0) + 1
        if batch % BATCH == 0:
            await asyncio.sleep(0.2)  # let the router and the master sync while the client runs
    return counts


@asynccontextmanager
async def ingress_controller(env: RouterEnv) -> AsyncIterator[IngressToRouteController]:
    """The master's ingress-to-route controller alone, on the router's store (the other
    master controllers would rewrite the hand-made Endpoints the good routes use)."""
    informers = Informers(env.store)
    controller = IngressToRouteController(env.client, informers)
    await informers.start()
    await controller.start()
    try:
        yield controller
    finally:
        await controller.stop()
        await informers.stop()


async def _ingress_routes(env: RouterEnv) -> list[Route]:
    return await env.client.list(Route, ING)


async def _served_by(env: RouterEnv, host: str, pod: str) -> bool:
    r = await env.get(host)
    return (r.status, r.backend) == (200, pod)


async def _served_by_tls(env: RouterEnv, host: str, pod: str) -> bool:
    r = await env.get_tls(host)
    return (r.status, r.backend) == (200, pod)


async def test_hostile_secrets_and_ingresses_cannot_disturb_good_routes(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.INFO)
    env = RouterEnv(tmp_path)
    try:
        with backends(*GOOD_PODS, "evil-1") as pods:
            web, secure, evil = pods
            await env.start()
            await good_routes(env, web, secure)
            for ns in (SEC, ING):
                await env.apply(namespace(ns), endpoints(ns, "evil", [evil]))
            await env.apply(service(SEC, "evil"))
            web_svc = service(ING, "web")
            web_svc.spec.ports[0].target_port = evil.port
            await env.apply(web_svc, endpoints(ING, "web", [evil]))

            first, then = rotated_secrets()
            await _apply(env, iter(first))
            await env.router.sync_now()
            await env.eventually(lambda: _served_by_tls(env, "u0.s.evil.example.com", "evil-1"))

            async with ingress_controller(env):
                with Client(env) as client:
                    await _replace(env, then)
                    counts = {
                        f"secrets {k}": v for k, v in (await _apply(env, secret_objects())).items()
                    }
                    counts |= {
                        f"ingress {k}": v for k, v in (await _apply(env, ingress_objects())).items()
                    }
                    await env.eventually(
                        lambda: _served_by(env, "ok.i.evil.example.com", "evil-1"), timeout=30
                    )
                    await env.router.sync_now()
                    await env.eventually(lambda: good_served(env))
                    answered = await every_route_answered(env)
                made = await _ingress_routes(env)
            assert client.failed == [], client.failed[:10]
            assert client.ok > 50, client.ok
            assert counts["secrets around_api"] >= 2 and counts["ingress around_api"] > 20, counts
            assert len(made) > 100, len(made)
            # Only the certificates HAProxy refuses are left out by bisection.
            refused = {k for k, why in env.router.skipped.items() if "HAProxy refused" in why}
            weak = {
                (r.metadata.namespace, r.metadata.name)
                for r in await env.client.list(Route)
                if r.spec.host and r.spec.host.startswith("weak.")
            }
            weak.add((SEC, f"u{len(then) - 1}"))
            assert len(weak) == 3 and refused == weak, env.router.skipped
            tracebacks = [r.getMessage() for r in caplog.records if r.exc_info]
            assert tracebacks == [], tracebacks[:5]
            print(f"hostile {counts} ingress routes={len(made)} answered={answered}")
            assert env.router.driver.process.alive()

            # A full restart with every hostile Secret, Ingress and Route in the store.
            await env.router.stop()
            await env.start()
            assert await good_served(env)
            with Client(env) as client:
                await asyncio.sleep(1.0)
            assert client.failed == [] and client.ok > 5, (client.failed[:10], client.ok)
            assert await _served_by(env, "ok.i.evil.example.com", "evil-1")
    finally:
        await env.stop()
