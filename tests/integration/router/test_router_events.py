"""A running router writes a Warning Event on each route it does not serve, saying why.

A route whose host an older route holds gets ``HostAlreadyClaimed``; a route
HAProxy refuses (found by bisection and left out of the configuration) gets
``ExtendedValidationFailed``. The older, served route gets none, and
``shiftnet describe route`` ends with what each has.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.integration.router.test_refused_routes import weak_rsa_route
from tests.support.backends import backends
from tests.support.cli import Shiftnet
from tests.support.router import RouterEnv, endpoints, namespace, route, service

from shiftnet.api import Event, Route
from shiftnet.events.folding import about

pytestmark = pytest.mark.integration


async def _events_of(env: RouterEnv, ns: str, name: str) -> list[Event]:
    found = await env.client.list(Event, ns)
    return about(found, await env.client.get(Route, ns, name))


async def test_a_route_claimed_by_an_older_route_gets_a_host_already_claimed_event(
    router_env: RouterEnv, tmp_path: Path
) -> None:
    env = router_env
    with backends("old-pod", "new-pod") as (old_pod, new_pod):
        await env.apply(namespace("team-a"))
        for name, pod in (("old", old_pod), ("new", new_pod)):
            await env.apply(service("team-a", name), endpoints("team-a", name, [pod]))
        await env.apply(route("team-a", "old", "claimed.example.com", "old"))
        await env.eventually(lambda: env.ingress("team-a", "old"))
        await env.apply(route("team-a", "new", "claimed.example.com", "new"))

        found = await env.eventually(lambda: _events_of(env, "team-a", "new"))
        (event,) = found
        assert (event.type, event.reason) == ("Warning", "HostAlreadyClaimed")
        assert "team-a/old" in (event.message or ""), event.message
        assert event.source.component == "router"
        assert event.source.host == env.config.name
        assert event.count == 1 and event.first_timestamp and event.last_timestamp
        ref = event.involved_object
        assert (ref.kind, ref.api_version) == ("Route", "route.openshift.io/v1")
        assert ref.uid == (await env.client.get(Route, "team-a", "new")).metadata.uid
        assert event.metadata.name.startswith("new.")
        assert await _events_of(env, "team-a", "old") == []

        # `shiftnet describe route` ends with that Event, the older route's with none
        sn = Shiftnet(f"sqlite:///{tmp_path}/state.db", tmp_path / "cli-home")
        shown = await asyncio.to_thread(sn.ok, "describe", "route", "new", "-n", "team-a")
        tail = shown[shown.index("Events:") :].splitlines()
        assert tail[1].split() == ["Type", "Reason", "Age", "From", "Message"]
        assert tail[3].split()[:2] == ["Warning", "HostAlreadyClaimed"] and len(tail) == 4
        assert f"router, {env.config.name}" in tail[3] and "team-a/old" in tail[3]
        old = await asyncio.to_thread(sn.ok, "describe", "route", "old", "-n", "team-a")
        assert "Events:  <none>" in old


async def test_a_route_haproxy_refuses_gets_an_extended_validation_failed_event(
    router_env: RouterEnv,
) -> None:
    env = router_env
    await env.apply(namespace("team-b"), service("team-b", "bad"))
    await env.apply(weak_rsa_route("team-b", "bad", "bad.example.com", "bad"))
    found = await env.eventually(lambda: _events_of(env, "team-b", "bad"), timeout=20)
    (event,) = found
    assert (event.type, event.reason) == ("Warning", "ExtendedValidationFailed")
    assert "HAProxy refused it" in (event.message or ""), event.message
