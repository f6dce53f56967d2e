"""The router reads EndpointSlices: pools follow a Service's slices, ready endpoints only."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.backends import Backend, backends
from tests.support.ports import free_port
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.api import EndpointSlice

pytestmark = pytest.mark.integration


def es(ns: str, name: str, svc: str, ready: list[Backend], going: list[Backend]) -> EndpointSlice:
    def one(b: Backend, conditions: dict[str, bool]) -> dict[str, Any]:
        ref = {"kind": "Pod", "namespace": ns, "name": b.name}
        return {"addresses": [b.ip], "conditions": conditions, "targetRef": ref}

    port = (ready or going)[0].port
    return EndpointSlice.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {"kubernetes.io/service-name": svc},
            },
            "addressType": "IPv4",
            "endpoints": [one(b, {"ready": True}) for b in ready]
            + [one(b, {"ready": False, "serving": True, "terminating": True}) for b in going],
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
        }
    )


async def answered_by(env: RouterEnv, host: str, tries: int = 12) -> set[str]:
    seen = set()
    for _ in range(tries):
        r = await env.get(host)
        if r.status == 200:
            seen.add(r.backend)
    return seen


async def test_pools_follow_slices_over_endpoints(router_env: RouterEnv) -> None:
    env = router_env
    host = "web.demo.example.com"
    with backends("old-pod", "web-1", "web-2", port=free_port()) as pods:
        old, web1, web2 = pods
        await env.apply(namespace("demo"), service("demo", "web"), endpoints("demo", "web", [old]))
        await env.apply(route("demo", "web", host, "web"))
        await env.eventually(lambda: _is(answered_by(env, host), {"old-pod"}))
        # slices appear: they, not the Endpoints, say who serves; terminating is not ready
        await env.apply(es("demo", "web-a", "web", [web1], [old]))
        await env.eventually(lambda: _is(answered_by(env, host), {"web-1"}))
        await env.apply(es("demo", "web-b", "web", [web2], []))
        await env.eventually(lambda: _is(answered_by(env, host), {"web-1", "web-2"}))
        await env.delete(EndpointSlice, "demo", "web-a")
        await env.eventually(lambda: _is(answered_by(env, host), {"web-2"}))


async def _is(coro, want: set[str]) -> bool:  # type: ignore[no-untyped-def]
    return await coro == want
