"""Route updates as OpenShift's ``ValidateRouteUpdate``, case by case, and every door
that updates a Route (the client, the API server's verbs) applying them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from shiftnet.api import Namespace, parse_object
from shiftnet.api.route import Route
from shiftnet.api.validation import errors, standing_errors, update_errors
from shiftnet.apiserver.resources import find
from shiftnet.apiserver.status import StatusError
from shiftnet.apiserver.verbs import Verbs
from shiftnet.client import Client
from shiftnet.errors import InvalidObject
from shiftnet.store import open_store

ALLOW = {"route.openshift.io/allow-non-dns-compliant-host": "true"}
LONG = "a" * 64  # a label over 63: refused on create, kept when an update leaves it
LONG_HOST = f"{LONG}.example.com"
LONG_LABEL = "each part between dots must be no more than 63 characters"
IMMUTABLE = "field is immutable"


def route(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> Route:
    raw = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "web", "namespace": "demo", "annotations": annotations or {}},
        "spec": {"to": {"kind": "Service", "name": "web"}, **spec},
    }
    obj = parse_object(raw)
    assert isinstance(obj, Route)
    return obj


# (id, old spec, new spec, new annotations, the first error of the update or None)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, str], str | None]] = [
    (
        "wildcardPolicy None to Subdomain",
        {"host": "a.example.com"},
        {"host": "a.example.com", "wildcardPolicy": "Subdomain"},
        {},
        f'spec.wildcardPolicy: Invalid value: "Subdomain": {IMMUTABLE}',
    ),
    (
        "wildcardPolicy Subdomain to None",
        {"host": "a.example.com", "wildcardPolicy": "Subdomain"},
        {"host": "a.example.com", "wildcardPolicy": "None"},
        {},
        f'spec.wildcardPolicy: Invalid value: "None": {IMMUTABLE}',
    ),
    (
        "wildcardPolicy empty is None",
        {"host": "a.example.com", "wildcardPolicy": ""},
        {"host": "a.example.com", "wildcardPolicy": "None"},
        {},
        None,
    ),
    ("long label kept", {"host": LONG_HOST}, {"host": LONG_HOST, "path": "/x"}, {}, None),
    (
        "long label introduced",
        {"host": "a.example.com"},
        {"host": LONG_HOST},
        {},
        f'spec.host: Invalid value: "{LONG_HOST}": {LONG_LABEL}',
    ),
    (
        "long label introduced with the annotation",
        {"host": "a.example.com"},
        {"host": LONG_HOST},
        ALLOW,
        None,
    ),
    (
        "old host with a long label: the new host's labels are not checked",
        {"host": LONG_HOST},
        {"host": "b" * 70 + ".example.com"},
        {},
        None,
    ),
    (
        "a changed host is still a subdomain",
        {"host": LONG_HOST},
        {"host": "Upper.example.com"},
        {},
        'spec.host: Invalid value: "Upper.example.com": a lowercase RFC 1123 subdomain must '
        "be made of lowercase letters, digits, '-' or '.', and must start and end with a "
        "letter or digit (e.g. 'www.example.com')",
    ),
    (
        "host set where there was none",
        {},
        {"host": LONG_HOST},
        {},
        f'spec.host: Invalid value: "{LONG_HOST}": {LONG_LABEL}',
    ),
    ("path with # kept", {"path": "/a#b"}, {"path": "/a#b", "host": "x.example.com"}, {}, None),
    ("path with space kept", {"path": "/a b"}, {"path": "/a b", "to": {"name": "v2"}}, {}, None),
    (
        "path with # introduced",
        {"path": "/a"},
        {"path": "/a#b"},
        {},
        'spec.path: Invalid value: "/a#b": cannot contain # or spaces',
    ),
    (
        "path changed, still with a space",
        {"path": "/a b"},
        {"path": "/a c"},
        {},
        'spec.path: Invalid value: "/a c": cannot contain # or spaces',
    ),
    (
        "a path must begin with / even when kept",
        {"path": "x"},
        {"path": "x"},
        {},
        'spec.path: Invalid value: "x": path must begin with /',
    ),
    (
        "other rules still apply",
        {"host": LONG_HOST},
        {"host": LONG_HOST, "to": {"name": "web", "weight": 999}},
        {},
        "spec.to.weight: Invalid value: 999: weight must be an integer between 0 and 256",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "notes", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_update(
    old: dict[str, Any], new: dict[str, Any], notes: dict[str, str], want: str | None
) -> None:
    found = update_errors(route(new, notes), route(old))
    assert (str(found[0]) if found else None) == want


def test_create_refuses_what_an_update_keeps() -> None:
    for spec in ({"host": LONG_HOST}, {"path": "/a#b"}, {"path": "/a b"}):
        assert errors(route(spec)), spec
        assert update_errors(route(spec), route(spec)) == []
        assert standing_errors(route(spec)) == []


def test_standing_errors_are_those_of_any_update() -> None:
    for spec in ({"path": "x"}, {"host": "Upper"}, {"to": {"name": ""}}):
        assert standing_errors(route(spec)) == errors(route(spec)) != []


# ---------------------------------------------------------------- the doors


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _stored_grandfathered(store: Any) -> None:
    """A Route stored as an older release let it be (written past today's create rules)."""
    await store.create("routes", route({"host": LONG_HOST, "path": "/a#b"}).to_dict())


def test_client_update_keeps_what_it_does_not_touch(tmp_path: Path) -> None:
    async def go() -> None:
        store = open_store(f"sqlite:///{tmp_path}/state.db")
        try:
            await _stored_grandfathered(store)
            client = Client(store)

            def reweigh(r: Route) -> Route:
                r.spec.to.weight = 7
                return r

            written = await client.mutate(Route, "demo", "web", reweigh)
            assert written is not None and written.spec.to.weight == 7

            current = await client.get(Route, "demo", "web")
            changed = current.model_copy(deep=True)
            changed.spec.wildcard_policy = "Subdomain"
            with pytest.raises(InvalidObject, match=IMMUTABLE):
                await client.update(changed, current)
            changed = current.model_copy(deep=True)
            changed.spec.path = "/c#d"
            with pytest.raises(InvalidObject, match="cannot contain # or spaces"):
                await client.update(changed, current)
            assert (await client.get(Route, "demo", "web")).spec.to.weight == 7
        finally:
            await store.close()

    _run(go())


def test_api_server_update_keeps_what_it_does_not_touch(tmp_path: Path) -> None:
    info = find("route.openshift.io", "v1", "routes")
    assert info is not None

    async def go() -> None:
        store = open_store(f"sqlite:///{tmp_path}/state.db")
        try:
            await _stored_grandfathered(store)
            verbs = Verbs(store)
            body = await verbs.get(info, "demo", "web")
            body["spec"]["to"]["weight"] = 9
            out = await verbs.update(info, "demo", "web", body, dry_run=False)
            assert out["spec"]["to"]["weight"] == 9
            body = await verbs.get(info, "demo", "web")
            body["spec"]["wildcardPolicy"] = "Subdomain"
            with pytest.raises(StatusError) as err:
                await verbs.update(info, "demo", "web", body, dry_run=False)
            assert (err.value.code, err.value.reason) == (422, "Invalid")
            assert (
                f'spec.wildcardPolicy: Invalid value: "Subdomain": {IMMUTABLE}' in err.value.message
            )
            assert (await verbs.get(info, "demo", "web"))["spec"]["to"]["weight"] == 9
        finally:
            await store.close()

    _run(go())


def _full_update_errors(new: Route, old: Route) -> list[object]:
    """route_update_errors without its shortcut."""
    from shiftnet.api import names
    from shiftnet.api.route_validation import _all_spec_errors, invalid

    out: list[object] = []
    if (new.spec.wildcard_policy or "None") != (old.spec.wildcard_policy or "None"):
        out.append(invalid("spec.wildcardPolicy", new.spec.wildcard_policy, IMMUTABLE))
    labels_ok = not old.spec.host or all(
        names.is_dns1123_label(x) for x in old.spec.host.split(".")
    )
    return out + _all_spec_errors(
        new,
        check_host_labels=new.spec.host != old.spec.host and labels_ok,
        check_path_characters=new.spec.path != old.spec.path,
    )


SPECS: list[dict[str, Any]] = [
    {},
    {"host": "a.example.com"},
    {"host": LONG_HOST},
    {"host": "Upper.example.com"},
    {"path": "/a#b"},
    {"path": "/ok"},
    {"path": "x"},
    {"host": "a.example.com", "wildcardPolicy": "Subdomain"},
    {"to": {"name": "", "weight": 999}},
    {"port": {"targetPort": 0}},
    {"tls": {"termination": "passthrough"}, "path": "/p"},
]


@pytest.mark.parametrize("old", SPECS)
@pytest.mark.parametrize("new", SPECS)
def test_the_shortcuts_agree_with_the_full_rules(old: dict[str, Any], new: dict[str, Any]) -> None:
    from shiftnet.api.route_validation import route_standing_errors, route_update_errors

    a, b = route(new), route(old)
    assert route_update_errors(a, b) == _full_update_errors(a, b)
    assert route_standing_errors(a) == _full_update_errors(a, a)


def test_host_and_subdomain_together_are_a_warning(tmp_path: Path) -> None:
    """As upstream's Warnings: accepted, with ``spec.host is set; spec.subdomain may be
    ignored`` in the API server's Warning headers."""
    from shiftnet.api.validation import warnings
    from shiftnet.apiserver.fieldvalidation import FieldCheck

    both = route({"host": "a.example.com", "subdomain": "a"})
    assert errors(both) == []
    assert warnings(both) == ["spec.host is set; spec.subdomain may be ignored"]
    assert warnings(route({"subdomain": "a"})) == []
    assert warnings(route({"host": "a.b"})) == []
    info = find("route.openshift.io", "v1", "routes")
    assert info is not None

    async def go() -> None:
        store = open_store(f"sqlite:///{tmp_path}/state.db")
        try:
            await Client(store).create(Namespace.model_validate({"metadata": {"name": "demo"}}))
            verbs, check = Verbs(store), FieldCheck()
            await verbs.create(info, "demo", both.to_dict(), dry_run=False, check=check)
            assert check.warnings == ["spec.host is set; spec.subdomain may be ignored"]
            again = FieldCheck()
            body = await verbs.get(info, "demo", "web")
            body["spec"]["path"] = "/x"
            await verbs.update(info, "demo", "web", body, dry_run=False, check=again)
            assert again.warnings == ["spec.host is set; spec.subdomain may be ignored"]
        finally:
            await store.close()

    _run(go())
