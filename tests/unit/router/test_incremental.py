"""The incremental indices equal a full computation after every random change.

AdmissionIndex vs ``admit``, ModelIndex vs ``build_model`` and Assembly vs
``render``: the router serves what the incremental path computes, so any
drift here would be a routing bug that only shows after a particular
sequence of events. Hosts are few and shared (two domains, wildcards,
several namespaces and paths), so claims, ownership and path ranks collide
often.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from tests.support import routes as f

from shiftnet.api import Endpoints, Namespace, Route, Service
from shiftnet.router.admission import admit, route_key
from shiftnet.router.admission_index import AdmissionIndex
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model
from shiftnet.router.model_index import ModelIndex

PATHS = RenderPaths(run_dir="/run/sn", default_certificate="/run/sn/default.pem")
HOSTS = ["a.one.test", "b.one.test", "c.one.test", "a.two.test", "x.two.test"]
NAMESPACES = ["ns", "other"]
SERVICES = ["s1", "s2", "s3"]


def _random_route(rng: random.Random, name: str, namespace: str) -> Route:
    host = rng.choice(HOSTS)
    tls = rng.choice([None, None, {"termination": "edge"}, {"termination": "passthrough"}])
    alternates = [(rng.choice(SERVICES), rng.randint(0, 5))] if rng.random() < 0.2 else None
    return f.route(
        name,
        host,
        namespace=namespace,
        service=rng.choice(SERVICES),
        path=rng.choice(["", "", "/api", "/api/v2"])
        if tls != {"termination": "passthrough"}
        else "",
        tls=tls,
        alternates=alternates,
        wildcard=rng.random() < 0.15,
        created=f"2026-01-0{rng.randint(1, 9)}T00:00:00Z",
        uid=f"{name}-{rng.randint(0, 99)}",
    )


def _random_endpoints(rng: random.Random, name: str, namespace: str) -> Endpoints:
    count = rng.randint(0, 3)
    ips = sorted({f"127.0.{rng.randint(0, 3)}.{rng.randint(1, 9)}" for _ in range(count)})
    return f.endpoints(name, ips, [("http", 8080)], namespace=namespace)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("wildcards", [False, True])
def test_indices_equal_a_full_computation_after_every_change(seed: int, wildcards: bool) -> None:
    rng = random.Random(seed)
    config = dataclasses.replace(RouterConfig(), allow_wildcard_routes=wildcards)
    routes: dict[tuple[str, str], Route] = {}
    endpoints: dict[tuple[str, str], Endpoints] = {}
    services: dict[tuple[str, str], Service] = {}
    namespaces = [Namespace.model_validate({"metadata": {"name": n}}) for n in NAMESPACES]
    index = AdmissionIndex(config)
    models = ModelIndex(lambda ns, n: endpoints.get((ns, n)), lambda ns, n: services.get((ns, n)))
    assembly = Assembly(config, PATHS)
    index.reset([], namespaces)
    for _ in range(80):
        roll = rng.random()
        changed_routes: dict[tuple[str, str], Route | None] = {}
        changed_pools: set[tuple[str, str]] = set()
        namespace = rng.choice(NAMESPACES)
        if roll < 0.55:
            name = f"r{rng.randint(0, 14)}"
            route = _random_route(rng, name, namespace)
            routes[route_key(route)] = route
            changed_routes[route_key(route)] = route
        elif roll < 0.75 and routes:
            key = rng.choice(sorted(routes))
            del routes[key]
            changed_routes[key] = None
        elif roll < 0.9:
            name = rng.choice(SERVICES)
            endpoints[(namespace, name)] = _random_endpoints(rng, name, namespace)
            changed_pools.add((namespace, name))
        else:
            name = rng.choice(SERVICES)
            services[(namespace, name)] = f.service(name, [("http", 80, 8080)], namespace=namespace)
            changed_pools.add((namespace, name))

        decided = index.update(changed_routes, {n.metadata.name: n for n in namespaces})
        admitted = {
            k: ((index.admitted[k], index.host_of(k)) if k in index.admitted else None)
            for k in decided
        }
        assembly.update(models.update(admitted, changed_pools))

        full = admit(list(routes.values()), namespaces, config)
        assert index.result() == full
        model = build_model(full, list(endpoints.values()), list(services.values()))
        assert models.model() == model
        full_render = render(model, config, PATHS)
        assert assembly.files() == full_render.files
        assert assembly.description() == full_render.description


def test_a_namespace_reset_reports_exactly_the_changed_decisions() -> None:
    config = RouterConfig()
    a = f.route("a", "app.example.com", created="2026-01-01T00:00:00Z")
    b = f.route(
        "b", "app.example.com", namespace="other", path="/x", created="2026-01-02T00:00:00Z"
    )
    index = AdmissionIndex(config)
    assert index.reset([a, b], []) == {("ns", "a"), ("other", "b")}
    assert index.reset([a, b], []) == set()  # nothing moved
    assert index.update({("ns", "a"): None}, {}) >= {("ns", "a"), ("other", "b")}
    assert index.decisions[("other", "b")].admitted  # the older claim is gone


def test_refresh_holds_the_newer_status_only_copy() -> None:
    config = RouterConfig()
    old = f.route("a", "app.example.com", created="2026-01-01T00:00:00Z")
    index = AdmissionIndex(config)
    index.reset([old], [])
    newer = old.model_copy(deep=True)
    newer.metadata.resource_version = "7"
    index.refresh(newer)
    assert index.admitted[("ns", "a")] is newer
    assert index.result() == admit([newer], [], config)
    models = ModelIndex(lambda ns, n: None, lambda ns, n: None)
    models.update({("ns", "a"): (old, "app.example.com")})
    models.refresh(("ns", "a"), newer)
    assert models.update({}, [("ns", "svc")]) == {}  # the rebuilt policy is the same
