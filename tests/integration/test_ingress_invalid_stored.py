"""An Ingress stored around API validation is reported once, not retried forever.

Writing its status back fails validation however often it is tried, so the
ingress-to-route controller must report it and wait for the Ingress to change,
while the Ingress beside it gets its Route and status as usual.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.support.master import eventually, running_master, service

from shiftnet.api import Event, Ingress, Route, parse_object
from shiftnet.client import Client
from shiftnet.errors import InvalidObject
from shiftnet.informer import Informer

pytestmark = pytest.mark.integration

CANONICAL = "default.shiftnet.local"
QUIET = 0.3  # seconds watched for retries; with 5-20 ms retry delays, a dozen would show
RETRIED = "sync failed, will retry queue=ingress-to-route key=('default', 'bad')"


def body(name: str, path_type: str) -> dict[str, Any]:
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "rules": [
                {
                    "host": f"{name}.example.com",
                    "http": {"paths": [{"path": "/", "pathType": path_type, "backend": backend}]},
                }
            ]
        },
    }


async def admit_all(client: Client) -> list[Route]:
    """Admit every Route as a router named ``default`` does, so status is due."""
    found = await client.list(Route, "default")
    for route in found:
        if route.status.ingress:
            continue
        admitted = route.model_copy(deep=True)
        admitted.status = type(route.status).model_validate(
            {
                "ingress": [
                    {
                        "host": route.spec.host,
                        "routerName": "default",
                        "routerCanonicalHostname": CANONICAL,
                        "conditions": [{"type": "Admitted", "status": "True"}],
                    }
                ]
            }
        )
        await client.update(admitted, route)
    return found


async def hostnames(client: Client, name: str) -> list[str | None]:
    ing = await client.get(Ingress, "default", name)
    return [e.hostname for e in ing.status.load_balancer.ingress]


async def _cached_status(cache: Informer[Ingress]) -> list[str | None]:
    ing = cache.get("default", "good")
    return [e.hostname for e in ing.status.load_balancer.ingress] if ing else []


async def events_on(client: Client, name: str) -> list[Event]:
    return [
        e
        for e in await client.list(Event, "default")
        if e.reason == "IncompleteIngressToRouteRules" and e.involved_object.name == name
    ]


async def test_an_invalid_stored_ingress_is_reported_once_and_not_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with running_master(f"sqlite:///{tmp_path}/store.db") as (master, client):
        queue = master.ingress_routes.queue
        queue.retry_delay, queue.max_retry_delay = 0.005, 0.02
        await client.create(service("web"))
        await client.create(parse_object(body("good", "Prefix")))
        bad = body("bad", "x")
        with pytest.raises(InvalidObject):
            await client.create(parse_object(bad))
        await client.store.create(Ingress.RESOURCE, bad)  # around validation

        await eventually(lambda: admit_all(client), lambda r: len(r) == 2)
        await eventually(lambda: hostnames(client, "good"), lambda h: h == [CANONICAL])

        async def reported_or_retried() -> tuple[list[Event], int]:
            return await events_on(client, "bad"), caplog.text.count(RETRIED)

        found, retries = await eventually(reported_or_retried, lambda v: bool(v[0] or v[1]))
        assert retries == 0, "the status write of 'bad' was retried"
        [event] = found
        assert event.message is not None
        assert "status not written" in event.message and "pathType" in event.message

        # the controller's cache has seen its own status write: nothing is left to sync
        cache = master.ingress_routes.ingresses
        await eventually(lambda: _cached_status(cache), lambda h: h == [CANONICAL])
        await asyncio.wait_for(queue.wait_idle(), 2.0)  # and no retry is pending
        syncs = queue.syncs
        await asyncio.sleep(QUIET)
        assert queue.syncs == syncs, f"{queue.syncs - syncs} syncs of an unchanged cluster"
        assert RETRIED not in caplog.text
        await master.events.flush()
        assert len(await events_on(client, "bad")) == 1

        # a valid edit of the bad Ingress is acted on: its status is written
        current = await client.get(Ingress, "default", "bad")
        fixed = current.model_copy(deep=True)
        http = fixed.spec.rules[0].http
        assert http is not None
        http.paths[0].path_type = "Prefix"
        await client.update(fixed, current)
        await eventually(lambda: hostnames(client, "bad"), lambda h: h == [CANONICAL])
