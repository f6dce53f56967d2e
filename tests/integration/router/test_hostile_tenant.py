"""A hostile tenant cannot disturb the routes of others, nor keep the router from starting.

Good routes (HTTP and edge TLS, in their own namespaces) serve under a running
client -- a bounded loop of fresh-connection requests on loopback, in a
thread -- while one tenant applies, batch by batch, hostile values for every
Route field and annotation that reaches HAProxy (``tests/support/hostile``):
hosts, paths, names, header actions, every annotation's near misses and injection strings,
backend services and weights, target ports, wildcard and insecure policies,
PEM oddities in certificate/key/CA/destination CA, and a certificate HAProxy
refuses though validation accepts it; then Endpoints and EndpointSlices with
hostile addresses, ports and pod names (through the API, and straight into the
store around its validation, as a foreign writer could). Each hostile route is
refused by the API, not admitted (with a reason), left out by the renderer or
by bisection, or served harmlessly. The good routes see 0 failed requests, and
a router restarted from scratch with all of it in the store serves them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.support.backends import Backend, backends
from tests.support.hostile import (
    ANNOTATION_KEYS,
    FIXED_HOSTILE,
    HEADER_NAMES,
    HEADER_VALUES,
    HOSTILE_ENDPOINT_PORTS,
    HOSTILE_HOSTS,
    HOSTILE_INSECURE_POLICIES,
    HOSTILE_IPS,
    HOSTILE_NAMES,
    HOSTILE_PATHS,
    HOSTILE_POD_NAMES,
    HOSTILE_SERVICE_NAMES,
    HOSTILE_TARGET_PORTS,
    HOSTILE_WEIGHTS,
    HOSTILE_WILDCARD_POLICIES,
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
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.api import Endpoints, EndpointSlice, Route, Service, parse_object
from shiftnet.errors import ShiftnetError

pytestmark = pytest.mark.integration

EVIL = "evil"
BATCH = 25
CA = issue("hostile CA", ca=True)
LEAF = issue("evil.example.com", issuer=CA)
WEAK_HOST = "weak.evil.example.com"  # RSA 1024: validation accepts it, HAProxy refuses it


def hostile_routes() -> Iterator[Route | dict[str, Any]]:
    """Every hostile route, as a Route or (when even parsing refuses it) as a raw body."""
    n = 0

    def name() -> str:
        nonlocal n
        n += 1
        return f"h{n}"

    for host in HOSTILE_HOSTS:
        yield route(EVIL, name(), host, "evil")
    for path in HOSTILE_PATHS:
        yield route(EVIL, name(), f"p{n}.evil.example.com", "evil", path=path)
    for key in ANNOTATION_KEYS:
        for value in NEAR_MISSES.get(key, []) + FIXED_HOSTILE[:8] + [FIXED_HOSTILE[-1]]:
            yield route(EVIL, name(), f"a{n}.evil.example.com", "evil", annotations={key: value})
    for header in HEADER_NAMES:
        actions = {"request": [{"name": header, "action": {"type": "Delete"}}]}
        yield route(
            EVIL, name(), f"hn{n}.evil.example.com", "evil", httpHeaders={"actions": actions}
        )
    for value in HEADER_VALUES + FIXED_HOSTILE:
        set_value = {"name": "X-Evil", "action": {"type": "Set", "set": {"value": value}}}
        for direction in ("request", "response"):
            actions = {direction: [set_value]}
            yield route(
                EVIL, name(), f"hv{n}.evil.example.com", "evil", httpHeaders={"actions": actions}
            )
    for case in pem_cases(LEAF.cert_pem, LEAF.key_pem, CA.cert_pem, key_pem(ec_key()), LEAF.key):
        tls = {"termination": "edge", **{k: v for k, v in case.tls.items() if v}}
        yield route(EVIL, name(), f"t{n}.evil.example.com", "evil", tls=tls)
        ca = case.tls.get("caCertificate") or case.tls["certificate"]
        yield route(
            EVIL,
            name(),
            f"d{n}.evil.example.com",
            "evil",
            tls={"termination": "reencrypt", "destinationCACertificate": ca},
        )
    weak = issue(WEAK_HOST, key=rsa.generate_private_key(65537, 1024))
    yield route(
        EVIL,
        name(),
        WEAK_HOST,
        "evil",
        tls={"termination": "edge", "certificate": weak.cert_pem, "key": weak.key_pem},
    )
    for bad_name in HOSTILE_NAMES + FIXED_HOSTILE[:6]:
        yield _raw(bad_name, EVIL, f"n{n}.evil.example.com")
        yield _raw(f"ok{n}", bad_name, f"m{n}.evil.example.com")
    yield from _backend_routes(name)
    # A tenant claiming a good tenant's host: the older claim keeps it.
    yield route(EVIL, name(), "web.good.example.com", "evil")


def _raw(name: str, ns: str, host: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"host": host, "to": {"kind": "Service", "name": "evil"}, **spec},
    }


def _backend_routes(name: Callable[[], str]) -> Iterator[dict[str, Any]]:
    """Hostile spec.to, alternateBackends, weights, targetPort, wildcard and insecure policies."""

    def to(svc: object, weight: object = 100) -> dict[str, Any]:
        return {"kind": "Service", "name": svc, "weight": weight}

    def host() -> str:
        return f"{name()}.b.evil.example.com"

    for svc in HOSTILE_SERVICE_NAMES + FIXED_HOSTILE:
        yield _raw(name(), EVIL, host(), to=to(svc))
        yield _raw(name(), EVIL, host(), alternateBackends=[to(svc, 1), to("evil", 1)])
    for weight in HOSTILE_WEIGHTS:
        yield _raw(name(), EVIL, host(), to=to("evil", weight))
        yield _raw(name(), EVIL, host(), alternateBackends=[to("evil", weight), to("e2", weight)])
    # Four alternates is OpenShift's limit; the same service twice; a weight sum past int32.
    many = [to(f"e{i}", 256) for i in range(5)]
    yield _raw(name(), EVIL, host(), alternateBackends=many)
    yield _raw(name(), EVIL, host(), alternateBackends=[to("evil", 1), to("evil", 7)])
    yield _raw(
        name(), EVIL, host(), to=to("evil", 2**31 - 1), alternateBackends=[to("e2", 2**31 - 1)]
    )
    for port in HOSTILE_TARGET_PORTS:
        yield _raw(name(), EVIL, host(), port={"targetPort": port})
    for policy in HOSTILE_WILDCARD_POLICIES:
        yield _raw(name(), EVIL, f"w.{host()}", wildcardPolicy=policy)
    for policy in HOSTILE_INSECURE_POLICIES:
        for termination in ("edge", "passthrough", "reencrypt"):
            tls = {"termination": termination, "insecureEdgeTerminationPolicy": policy}
            yield _raw(name(), EVIL, host(), tls=tls)


def hostile_endpoints(evil: Backend) -> Iterator[tuple[str, dict[str, Any]]]:
    """(service, Endpoints or EndpointSlice body) pairs, each next to ``evil``'s own address.

    Services ``ep*`` and ``slep*`` get hostile pod names only (their routes must
    still be served by ``evil``); ``bad*`` get hostile addresses, ports and port
    names. One service each: a Service with slices is read from its slices.
    """
    ref = {"kind": "Pod", "namespace": EVIL}
    good_addr = {"ip": evil.ip, "targetRef": {**ref, "name": "evil-1"}}
    for i, pod in enumerate(HOSTILE_POD_NAMES):
        target = {**ref, "name": pod}
        addr = {"ip": evil.ip, "targetRef": target}
        ports = [{"name": "http", "port": evil.port}]
        yield f"ep{i}", _endpoints(f"ep{i}", [{"addresses": [addr], "ports": ports}])
        ep = {"addresses": [evil.ip], "targetRef": target, "hostname": pod, "nodeName": pod}
        yield f"slep{i}", _slice(f"slep{i}", [ep], [{"name": pod, "port": evil.port}])
        odd = {**addr, "hostname": pod, "nodeName": pod}
        yield f"epodd{i}", _endpoints(f"epodd{i}", [{"addresses": [odd], "ports": ports}])
    for i, ip in enumerate(HOSTILE_IPS):
        subset = {"addresses": [good_addr, {"ip": ip}], "ports": [{"port": evil.port}]}
        yield f"bad{i}", _endpoints(f"bad{i}", [subset])
        ep = {"addresses": [ip, evil.ip]}
        yield f"slbad{i}", _slice(f"slbad{i}", [ep], [{"port": evil.port}])
    bad_ports: list[object] = [*HOSTILE_ENDPOINT_PORTS, "x", None]
    for i, port in enumerate(bad_ports):
        subset = {"addresses": [good_addr], "ports": [{"name": "http", "port": port}]}
        yield f"badport{i}", _endpoints(f"badport{i}", [subset])
        yield f"slbadport{i}", _slice(f"slbadport{i}", [{"addresses": [evil.ip]}], [{"port": port}])
    for i, port_name in enumerate(FIXED_HOSTILE):
        subset = {"addresses": [good_addr], "ports": [{"name": port_name, "port": evil.port}]}
        yield f"badname{i}", _endpoints(f"badname{i}", [subset])
    # Address types the router does not serve, and a slice naming no service.
    for i, kind in enumerate(("FQDN", "IPv6", "", "x")):
        ep = {"addresses": ["evil.example.com", "::1", evil.ip]}
        yield f"sltype{i}", _slice(f"sltype{i}", [ep], [{"port": evil.port}], kind)
    yield "", _slice("", [{"addresses": [evil.ip]}], [{"port": evil.port}])


def _endpoints(name: str, subsets: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": EVIL},
        "subsets": subsets,
    }


def _slice(
    svc: str, eps: list[dict[str, Any]], ports: list[dict[str, Any]], kind: str = "IPv4"
) -> dict[str, Any]:
    """A slice of ``svc`` (no service label when ``svc`` is empty)."""
    labels = {"kubernetes.io/service-name": svc} if svc else {}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": svc or "nolabel", "namespace": EVIL, "labels": labels},
        "addressType": kind,
        "endpoints": [{"conditions": {"ready": True}, **e} for e in eps],
        "ports": ports,
    }


async def _apply_hostile(env: RouterEnv) -> dict[str, int]:
    """Apply every hostile route, in batches; count what the API refused and accepted."""
    counts = {"refused_by_api": 0, "stored": 0}
    for batch, item in enumerate(hostile_routes(), 1):
        try:
            obj = item if isinstance(item, Route) else Route.model_validate(item)
            ns = obj.metadata.namespace or ""
            if await env.client.try_get(type(namespace(ns)), None, ns) is None:
                await env.client.create(namespace(ns))
            await env.client.create(obj)
            counts["stored"] += 1
        except (ShiftnetError, ValueError) as err:
            counts["refused_by_api"] += 1
            assert "Traceback" not in str(err)
        if batch % BATCH == 0:
            await asyncio.sleep(0.2)  # let the router sync while the client runs
    return counts


async def _apply_endpoints(env: RouterEnv, evil: Backend) -> dict[str, int]:
    """A Service and a route per hostile Endpoints/EndpointSlice, then the objects
    themselves: through the API, or into the store around it when the API refuses."""
    counts = {"endpoints_through_api": 0, "endpoints_around_api": 0}
    for svc in sorted({svc for svc, _ in hostile_endpoints(evil) if svc}):
        await env.client.create(service(EVIL, svc))
        await env.client.create(route(EVIL, f"r-{svc}", f"{svc}.e.evil.example.com", svc))
    for batch, (_, body) in enumerate(hostile_endpoints(evil), 1):
        cls = Endpoints if body["kind"] == "Endpoints" else EndpointSlice
        try:
            await env.client.create(parse_object(body))
            counts["endpoints_through_api"] += 1
        except (ShiftnetError, ValueError) as err:
            assert "Traceback" not in str(err)
            await env.store.create(cls.RESOURCE, body)  # as a foreign writer could
            counts["endpoints_around_api"] += 1
        if batch % BATCH == 0:
            await asyncio.sleep(0.2)
    return counts


async def _hostile_pod_names_served(env: RouterEnv) -> list[str]:
    """Hosts of the services whose only oddity is a pod name that evil-1 does not serve."""
    wrong = []
    for svc in await env.client.list(Service, EVIL):
        if svc.metadata.name.removeprefix("sl").startswith("ep"):
            host = f"{svc.metadata.name}.e.evil.example.com"
            r = await env.get(host)
            if (r.status, r.backend) != (200, "evil-1"):
                wrong.append(f"{host}: {r.status} {r.backend!r}")
    return wrong


async def test_hostile_tenant_cannot_disturb_good_routes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = RouterEnv(tmp_path)
    try:
        with backends(*GOOD_PODS, "evil-1") as pods:
            web, secure, evil = pods
            await env.start()
            await good_routes(env, web, secure)
            await env.apply(namespace(EVIL), service(EVIL, "evil"), endpoints(EVIL, "evil", [evil]))

            with Client(env) as client:
                counts = await _apply_hostile(env)
                counts |= await _apply_endpoints(env, evil)
                await env.router.sync_now()
                await env.eventually(lambda: good_served(env))
                answered = await every_route_answered(env)
            assert client.failed == [], client.failed[:10]
            assert client.ok > 100, client.ok
            assert counts["stored"] > 300 and counts["refused_by_api"] > 50, counts
            assert counts["endpoints_through_api"] > 10, counts
            assert counts["endpoints_around_api"] > 10, counts
            # Pod names reach nothing HAProxy reads: those routes serve as any other.
            assert await _hostile_pod_names_served(env) == []
            # The bisection left the route HAProxy refuses out, and HAProxy runs the rest.
            # Only the one HAProxy refuses for a reason validation does not judge: every
            # PEM oddity validation accepted loads in HAProxy as written.
            refused = {k for k, why in env.router.skipped.items() if "HAProxy refused" in why}
            weak = [r for r in env.router.routes.list() if r.spec.host == WEAK_HOST]
            assert refused == {(EVIL, weak[0].metadata.name)}, env.router.skipped
            print(
                f"hostile routes {counts} answered={answered} "
                f"requests ok={client.ok} failed={len(client.failed)}"
            )
            assert env.router.driver.process.alive()

            # A full restart with every hostile route in the store.
            await env.router.stop()
            await env.start()
            assert await good_served(env)
            with Client(env) as client:
                await asyncio.sleep(1.0)
            assert client.failed == [] and client.ok > 5, (client.failed[:10], client.ok)
            assert await _hostile_pod_names_served(env) == []
    finally:
        await env.stop()
