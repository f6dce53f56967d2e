"""Ingress-to-route controller on real stores: owned Routes follow the Ingress, edits go back."""

from __future__ import annotations

import base64
import logging
from typing import Any, TypeVar

import pytest
from tests.support.master import eventually, running_master, service
from tests.support.stores import etcd_server, store_url  # noqa: F401

from shiftnet.api import Event, Ingress, IngressClass, Route, Secret, parse_object
from shiftnet.client import Client

pytestmark = pytest.mark.integration

T = TypeVar("T")


def ingress(paths: list[tuple[str, str]], **spec: Any) -> Ingress:
    obj = parse_object(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "default", "labels": {"app": "shop"}},
            "spec": {
                "rules": [
                    {
                        "host": "shop.example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": p,
                                    "pathType": kind,
                                    "backend": {"service": {"name": "web", "port": {"number": 80}}},
                                }
                                for p, kind in paths
                            ]
                        },
                    }
                ],
                **spec,
            },
        }
    )
    assert isinstance(obj, Ingress)
    return obj


async def routes(client: Client) -> list[Route]:
    return sorted(await client.list(Route, "default"), key=lambda r: r.spec.path)


def paths(found: list[Route]) -> list[str]:
    return [r.spec.path for r in found]


async def test_routes_follow_the_ingress_and_go_with_it(store_url) -> None:  # noqa: F811
    async with running_master(store_url) as (_, client):
        default = await client.get(IngressClass, None, "openshift-default")
        assert default.spec.controller == "openshift.io/ingress-to-route"
        await client.create(service("web", ports=[{"name": "http", "port": 80}]))
        created = await client.create(
            ingress([("/", "Prefix"), ("/api", "ImplementationSpecific")])
        )
        found = await eventually(lambda: routes(client), lambda r: paths(r) == ["/", "/api"])
        for r in found:
            assert r.name.startswith("shop-") and len(r.name) == len("shop-") + 5
            [owner] = r.metadata.owner_references or []
            assert (owner.kind, owner.name, owner.uid, owner.controller) == (
                "Ingress",
                "shop",
                created.metadata.uid,
                True,
            )
            assert r.spec.port is not None and r.spec.port.target_port == "http"
            assert r.metadata.labels == {"app": "shop"}

        # a changed Ingress: /api goes, /v2 comes, / keeps its route (and name)
        current = await client.get(Ingress, "default", "shop")
        changed = ingress([("/", "Prefix"), ("/v2", "Prefix")])
        changed.metadata = current.metadata
        await client.update(changed, current)
        after = await eventually(lambda: routes(client), lambda r: paths(r) == ["/", "/v2"])
        assert after[0].name == found[0].name

        await client.delete(Ingress, "default", "shop")
        await eventually(lambda: routes(client), lambda r: r == [])


async def test_a_hand_edit_of_a_generated_route_is_put_back(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    async with running_master(url) as (_, client):
        await client.create(service("web", ports=[{"name": "http", "port": 80}]))
        await client.create(service("other"))
        await client.create(ingress([("/", "Prefix")]))
        [route] = await eventually(lambda: routes(client), lambda r: len(r) == 1)
        edited = route.model_copy(deep=True)
        edited.spec.to.name = "other"
        edited.spec.to.weight = 5  # OpenShift leaves the weight to the user
        await client.update(edited, route)
        [back] = await eventually(lambda: routes(client), lambda r: r[0].spec.to.name == "web")
        assert back.name == route.name and back.spec.to.weight == 5


async def test_an_exact_path_gets_no_route_and_an_event_on_the_ingress(tmp_path, caplog) -> None:
    """OpenShift records ``IncompleteIngressToRouteRules`` (type Normal) on the Ingress;
    shiftnet writes it once per change of the reasons, not on every resync."""
    url = f"sqlite:///{tmp_path}/store.db"
    caplog.set_level(logging.WARNING, logger="shiftnet.master.ingress")
    async with running_master(url) as (master, client):
        await client.create(service("web"))
        created = await client.create(ingress([("/exact", "Exact"), ("/", "Prefix")]))
        await eventually(lambda: routes(client), lambda r: paths(r) == ["/"])
        [event] = await eventually(lambda: incomplete(client), lambda e: len(e) == 1)
        ref = event.involved_object
        assert (ref.kind, ref.namespace, ref.name, ref.uid) == (
            "Ingress",
            "default",
            "shop",
            created.metadata.uid,
        )
        assert (event.type, event.source.component) == ("Normal", "master")
        assert event.message == (
            "Incomplete ingress to route rules detected: "
            "Unsupported exact path type in rule at index 0, path index 0"
        )
        assert "reason=IncompleteIngressToRouteRules" in caplog.text

        # a resync with the same reasons writes nothing more
        before = master.ingress_routes.queue.syncs
        await client.create(service("other"))  # a Service in the namespace requeues the Ingress
        await eventually(lambda: _async(master.ingress_routes.queue.syncs), lambda n: n > before)
        await master.ingress_routes.queue.wait_idle()
        await master.events.flush()
        [again] = await incomplete(client)
        assert again.count == 1

        # new reasons: a new Event naming the new path
        current = await client.get(Ingress, "default", "shop")
        changed = ingress([("/exact", "Exact"), ("/", "Prefix"), ("/one", "Exact")])
        changed.metadata = current.metadata
        await client.update(changed, current)
        found = await eventually(lambda: incomplete(client), lambda e: len(e) == 2)
        assert "Unsupported exact path type in rule at index 0, path index 2" in found[-1].message


async def test_a_route_refused_by_validation_is_reported_once_across_resyncs(tmp_path) -> None:
    """Each sync tries a freshly named Route; the reason names its host and path, not
    that random name, so a resync meeting the same refusal records nothing new."""
    async with running_master(f"sqlite:///{tmp_path}/store.db") as (master, client):
        await client.create(service("web"))
        shop = ingress([("/admin", "Prefix")])
        shop.metadata.annotations = {"route.openshift.io/termination": "passthrough"}
        await client.create(shop)
        [event] = await eventually(lambda: incomplete(client), lambda e: len(e) == 1)
        assert event.message == (
            "Incomplete ingress to route rules detected: the route for host "
            "'shop.example.com' path '/admin' is invalid: spec.path: Invalid value: "
            '"/admin": passthrough termination does not support paths'
        )
        for name in ("other", "third"):  # a Service in the namespace requeues the Ingress
            before = master.ingress_routes.queue.syncs
            await client.create(service(name))
            await eventually(
                lambda: _async(master.ingress_routes.queue.syncs), lambda n, b=before: n > b
            )
            await master.ingress_routes.queue.wait_idle()
        await master.events.flush()
        [again] = await incomplete(client)
        assert again.count == 1 and await routes(client) == []


async def incomplete(client: Client) -> list[Event]:
    found = [
        e
        for e in await client.list(Event, "default")
        if e.reason == "IncompleteIngressToRouteRules"
    ]
    return sorted(found, key=lambda e: e.message or "")


async def _async(value: T) -> T:
    return value


async def test_another_class_is_left_alone_and_tls_comes_from_the_secret(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    async with running_master(url) as (_, client):
        await client.create(service("web"))
        nginx = parse_object(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "IngressClass",
                "metadata": {"name": "nginx"},
                "spec": {"controller": "k8s.io/ingress-nginx"},
            }
        )
        assert isinstance(nginx, IngressClass)
        await client.create(nginx)
        theirs = ingress([("/", "Prefix")], ingressClassName="nginx")
        theirs.metadata.name = "theirs"
        await client.create(theirs)
        tls = [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
        await client.create(ingress([("/", "Prefix")], tls=tls))
        # no Secret yet: no route; the Secret appears: an edge route with its certificate
        secret = parse_object(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "shop-tls", "namespace": "default"},
                "type": "kubernetes.io/tls",
                "data": {
                    "tls.crt": base64.b64encode(b"CERT").decode(),
                    "tls.key": base64.b64encode(b"KEY").decode(),
                },
            }
        )
        assert isinstance(secret, Secret)
        assert await routes(client) == []
        await client.create(secret)
        [route] = await eventually(lambda: routes(client), lambda r: len(r) == 1)
        assert route.spec.tls is not None
        assert (route.spec.tls.termination, route.spec.tls.certificate) == ("edge", "CERT")
        assert [owner_name(route)] == ["shop"]


def owner_name(route: Route) -> str:
    return (route.metadata.owner_references or [])[0].name


async def test_status_names_the_router_that_admitted_the_route(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    async with running_master(url) as (_, client):
        await client.create(service("web"))
        await client.create(ingress([("/", "Prefix")]))
        [route] = await eventually(lambda: routes(client), lambda r: len(r) == 1)
        admitted = route.model_copy(deep=True)
        admitted.status = type(route.status).model_validate(
            {
                "ingress": [
                    {
                        "host": route.spec.host,
                        "routerName": "default",
                        "routerCanonicalHostname": "default.shiftnet.local",
                        "conditions": [{"type": "Admitted", "status": "True"}],
                    }
                ]
            }
        )
        await client.update(admitted, route)
        found = await eventually(
            lambda: client.get(Ingress, "default", "shop"),
            lambda i: bool(i.status.load_balancer.ingress),
        )
        assert [e.to_dict() for e in found.status.load_balancer.ingress] == [
            {"hostname": "default.shiftnet.local"}
        ]
