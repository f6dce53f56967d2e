"""Server-side apply's pure core: field sets, the merge, pruning, ownership and conflicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.import_rules import check

from shiftnet.api import Service
from shiftnet.api.core import Pod
from shiftnet.api.route import Route
from shiftnet.apiserver.apply import merge_applied, remove_paths
from shiftnet.apiserver.apply_shapes import shape_for
from shiftnet.apiserver.fieldsets import (
    compare,
    from_fields_v1,
    leaf_values,
    path_text,
    to_fields_v1,
)
from shiftnet.apiserver.managed_fields import (
    Owned,
    Owner,
    applier,
    conflict_error,
    decode,
    encode,
    entry_errors,
    pruned,
    record_apply,
    record_update,
    updater,
)
from shiftnet.apiserver.ownership import (
    field_manager,
    forgiven_paths,
    manager_from_agent,
    parse_force,
    synced_last_applied,
)
from shiftnet.apiserver.status import StatusError
from shiftnet.errors import FieldManagerConflict, InvalidPatch

SVC = shape_for(Service)
ROUTE = shape_for(Route)
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7"},
        "spec": spec,
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}},
    }


# ---------------------------------------------------------------- field sets

FIELD_SETS: list[tuple[str, type, dict[str, Any], dict[str, Any]]] = [
    (
        "ports keyed by port and protocol (TCP by default); selector is one value",
        Service,
        service(selector={"app": "web"}, ports=[{"port": 80, "targetPort": 8080}]),
        {
            "f:spec": {
                "f:ports": {
                    'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}, "f:targetPort": {}}
                },
                "f:selector": {},
            }
        },
    ),
    (
        "labels by key, an empty label value is data; identity, status and empties are nobody's",
        Route,
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "r", "labels": {"a": "1", "b": ""}, "annotations": {}},
            "spec": {"host": "", "to": {"kind": "Service", "name": "web"}},
            "status": {"ingress": []},
        },
        {
            "f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}},
            "f:spec": {"f:to": {"f:kind": {}, "f:name": {}}},
        },
    ),
    (
        "containers by name, their ports by containerPort and protocol; finalizers a set",
        Pod,
        {
            "metadata": {"name": "p", "finalizers": ["x"]},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "i",
                        "ports": [{"containerPort": 53, "protocol": "UDP"}],
                    }
                ]
            },
        },
        {
            "f:metadata": {"f:finalizers": {'v:"x"': {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"app"}': {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {
                            'k:{"containerPort":53,"protocol":"UDP"}': {
                                ".": {},
                                "f:containerPort": {},
                                "f:protocol": {},
                            }
                        },
                    }
                }
            },
        },
    ),
    (
        "Route lists are one value, except header actions (by name)",
        Route,
        {
            "spec": {
                "alternateBackends": [{"kind": "Service", "name": "b"}],
                "httpHeaders": {
                    "actions": {"request": [{"name": "X-A", "action": {"type": "Delete"}}]}
                },
            }
        },
        {
            "f:spec": {
                "f:alternateBackends": {},
                "f:httpHeaders": {
                    "f:actions": {
                        "f:request": {
                            'k:{"name":"X-A"}': {
                                ".": {},
                                "f:action": {"f:type": {}},
                                "f:name": {},
                            }
                        }
                    }
                },
            }
        },
    ),
]


@pytest.mark.parametrize(
    ("kind", "obj", "expected"), [c[1:] for c in FIELD_SETS], ids=[c[0] for c in FIELD_SETS]
)
def test_field_sets_as_fields_v1(kind: type, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    paths = frozenset(leaf_values(obj, shape_for(kind)))
    assert to_fields_v1(paths) == expected
    assert from_fields_v1(expected) == paths


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"spec": {"ports": [{"targetPort": 80}]}},
            'spec.ports[0]: the list item has no key field "port"',
        ),
        (
            {"spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]}},
            'spec.ports[1]: duplicate entries for key {"port":80,"protocol":"TCP"}',
        ),
        ({"spec": {"ports": ["80"]}}, "spec.ports[0]: a keyed list's item must be an object"),
    ],
)
def test_an_applied_keyed_list_needs_its_keys_once(config: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidPatch, match="^" + message.replace("[", r"\[").replace("{", r"\{")):
        leaf_values(config, SVC, strict=True)
    assert ("f:spec", "f:ports") in leaf_values(config, SVC)  # stored: one value


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("f:spec", "f:host"), ".spec.host"),
        (
            ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:targetPort"),
            '.spec.ports[port=80,protocol="TCP"].targetPort',
        ),
        (("f:metadata", "f:finalizers", 'v:"x"'), '.metadata.finalizers[="x"]'),
    ],
)
def test_paths_print_as_kubernetes_prints_them(path: tuple[str, ...], text: str) -> None:
    assert path_text(path) == text


# ---------------------------------------------------------------- merge and prune

MERGES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "maps merge by key, scalars replace",
        {
            "metadata": {"labels": {"a": "1"}},
            "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.9"},
        },
        {"metadata": {"labels": {"b": "2"}}, "spec": {"type": "NodePort"}},
        {
            "metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.9"},
        },
    ),
    (
        "keyed items merge field by field, new ones are appended",
        {"spec": {"ports": [{"port": 80, "targetPort": 1, "name": "h"}, {"port": 81}]}},
        {"spec": {"ports": [{"port": 82}, {"port": 80, "protocol": "TCP", "targetPort": 2}]}},
        {
            "spec": {
                "ports": [
                    {"port": 80, "targetPort": 2, "name": "h", "protocol": "TCP"},
                    {"port": 81},
                    {"port": 82},
                ]
            }
        },
    ),
    (
        "the same port over another protocol is another item",
        {"spec": {"ports": [{"port": 53}]}},
        {"spec": {"ports": [{"port": 53, "protocol": "UDP"}]}},
        {"spec": {"ports": [{"port": 53}, {"port": 53, "protocol": "UDP"}]}},
    ),
    (
        "an atomic map is replaced whole",
        {"spec": {"selector": {"app": "web", "tier": "a"}}},
        {"spec": {"selector": {"app": "shop"}}},
        {"spec": {"selector": {"app": "shop"}}},
    ),
    (
        "an atomic list is replaced whole",
        {"spec": {"externalIPs": ["1.1.1.1", "2.2.2.2"]}},
        {"spec": {"externalIPs": ["3.3.3.3"]}},
        {"spec": {"externalIPs": ["3.3.3.3"]}},
    ),
    (
        "sets merge as a union",
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"finalizers": ["c", "a"]}},
        {"metadata": {"finalizers": ["a", "b", "c"]}},
    ),
]


@pytest.mark.parametrize(
    ("live", "config", "expected"), [c[1:] for c in MERGES], ids=[c[0] for c in MERGES]
)
def test_merge(live: dict[str, Any], config: dict[str, Any], expected: dict[str, Any]) -> None:
    before = repr(live), repr(config)
    assert merge_applied(live, config, SVC) == expected
    assert (repr(live), repr(config)) == before  # arguments untouched


def test_remove_paths_takes_fields_items_and_values() -> None:
    obj = {
        "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
        "spec": {"ports": [{"port": 80, "targetPort": 1}, {"port": 81, "protocol": "TCP"}]},
    }
    gone = [
        ("f:metadata", "f:labels", "f:b"),
        ("f:metadata", "f:finalizers", 'v:"x"'),
        ("f:spec", "f:ports", 'k:{"port":81,"protocol":"TCP"}'),
        ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:targetPort"),
        ("f:spec", "f:missing"),
    ]
    assert remove_paths(obj, gone, SVC) == {
        "metadata": {"labels": {"a": "1"}, "finalizers": ["y"]},
        "spec": {"ports": [{"port": 80}]},
    }


def test_malformed_keys_a_client_stored_in_managed_fields_read_as_no_paths() -> None:
    """An update may store any managedFields; a key the merge or a conflict message
    cannot parse must not reach them (it made a later apply a 500)."""
    port = 'k:{"port":80,"protocol":"TCP"}'
    stored = {
        "f:spec": {
            "f:ports": {"k:bad": {}, "k:80": {"f:port": {}}, port: {}},
            "f:finalizers": {"v:{": {}, 'v:"x"': {}},
        }
    }
    live = {
        "metadata": {"managedFields": [{"manager": "a", "operation": "Apply", "fieldsV1": stored}]},
        "spec": {"ports": [{"port": 80}, {"port": 81}]},
    }
    entries = decode(live["metadata"]["managedFields"])
    kept = {("f:spec", "f:ports", port), ("f:spec", "f:finalizers", 'v:"x"')}
    assert entries[A].paths == kept
    gone = pruned(entries, A, frozenset())
    assert remove_paths(live, gone, SVC)["spec"] == {"ports": [{"port": 81}]}
    assert sorted(path_text(p) for p in gone) == [
        '.spec.finalizers[="x"]',
        '.spec.ports[port=80,protocol="TCP"]',
    ]


# ---------------------------------------------------------------- ownership

HOST = ("f:spec", "f:host")
TO = ("f:spec", "f:to", "f:name")
LABEL = ("f:metadata", "f:labels", "f:app")
A, B = applier("a"), applier("b")
EDIT = updater("kubectl-edit", "route.openshift.io/v1")


def route(host: str, to: str = "web", app: str | None = "web") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "r"}
    if app is not None:
        meta["labels"] = {"app": app}
    return {"metadata": meta, "spec": {"host": host, "to": {"name": to}}}


def change(old: dict[str, Any] | None, new: dict[str, Any]) -> Any:
    return compare(leaf_values(old, ROUTE) if old else {}, leaf_values(new, ROUTE))


def owned(*paths: tuple[str, ...], time: str = T0) -> Owned:
    return Owned(frozenset(paths), "route.openshift.io/v1", time)


def test_an_apply_changing_a_field_another_owns_conflicts() -> None:
    entries = {A: owned(HOST, TO, LABEL)}
    with pytest.raises(FieldManagerConflict) as err:
        record_apply(
            entries,
            change(route("a.com"), route("b.com")),
            B,
            frozenset({HOST}),
            "route.openshift.io/v1",
            T1,
            force=False,
        )
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "a": .spec.host'
    assert err.value.conflicts == [('"a"', ".spec.host")]


def test_the_same_value_is_shared_and_force_takes_a_field_over() -> None:
    entries = {A: owned(HOST, TO, LABEL)}
    shared = record_apply(
        entries, change(route("a.com"), route("a.com")), B, frozenset({HOST}), "v", T1, force=False
    )
    assert shared[A] == entries[A]  # unchanged, time kept
    assert shared[B].paths == {HOST} and shared[B].time == T1
    taken = record_apply(
        entries, change(route("a.com"), route("b.com")), B, frozenset({HOST}), "v", T1, force=True
    )
    assert taken[A].paths == {TO, LABEL} and taken[A].time == T1
    assert taken[B].paths == {HOST}


def test_a_reapply_of_the_same_configuration_changes_no_entry() -> None:
    entries = {A: owned(HOST, TO, LABEL)}
    again = record_apply(
        entries,
        change(route("a.com"), route("a.com")),
        A,
        frozenset({HOST, TO, LABEL}),
        "route.openshift.io/v1",
        T1,
        force=False,
    )
    assert again == entries
    assert encode(again) == encode(entries)


def test_an_update_takes_what_it_changed_and_nobody_keeps_what_is_gone() -> None:
    entries = {A: owned(HOST, TO, LABEL)}
    after = record_update(entries, change(route("a.com"), route("b.com", app=None)), EDIT, T1)
    assert after[A].paths == {TO}
    assert after[EDIT] == Owned(frozenset({HOST}), "route.openshift.io/v1", T1)
    assert record_update(entries, change(route("a.com"), route("a.com")), EDIT, T1) == entries


def test_prune_keeps_what_another_owner_holds() -> None:
    entries = {A: owned(HOST, TO, LABEL), B: owned(LABEL)}
    assert pruned(entries, A, frozenset({TO})) == [HOST]
    assert pruned(entries, B, frozenset()) == []  # A still applies the label
    assert pruned({}, A, frozenset({TO})) == []  # a first apply removes nothing


def test_conflicts_with_many_managers_are_grouped_as_upstream() -> None:
    err = conflict_error({EDIT: [HOST], A: [LABEL, TO]})
    assert str(err) == (
        "Apply failed with 3 conflicts: "
        'conflicts with "a":\n- .metadata.labels.app\n- .spec.to.name\n'
        'conflicts with "kubectl-edit" using route.openshift.io/v1:\n- .spec.host'
    )


def test_entries_round_trip_in_upstream_order() -> None:
    entries = {
        EDIT: owned(HOST, time=T1),
        B: owned(LABEL, time=T1),
        A: owned(TO, time=T0),
        Owner("x", "Update", "route.openshift.io/v1", "status"): owned(
            ("f:status", "f:ingress"), time=T0
        ),
    }
    raw = encode(entries)
    assert [(e["operation"], e["manager"]) for e in raw] == [
        ("Apply", "a"),
        ("Apply", "b"),
        ("Update", "x"),
        ("Update", "kubectl-edit"),
    ]
    assert raw[0] == {
        "manager": "a",
        "operation": "Apply",
        "apiVersion": "route.openshift.io/v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:to": {"f:name": {}}}},
    }
    assert raw[2]["subresource"] == "status"
    assert decode(raw) == entries
    assert decode("junk") == {} and decode([1, {"fieldsV1": []}]) == {
        Owner("", "Update", "", ""): Owned(frozenset(), "", None)
    }


# ---------------------------------------------------------------- from client-side apply

LAST = "kubectl.kubernetes.io/last-applied-configuration"


def csa_route(live_host: str, applied_host: str) -> dict[str, Any]:
    obj = route(live_host)
    obj["metadata"]["annotations"] = {LAST: json.dumps(route(applied_host))}
    return obj


@pytest.mark.parametrize(
    ("live", "manager", "expected"),
    [
        (csa_route("a.com", "a.com"), "kubectl", {HOST, TO, LABEL}),
        (csa_route("b.com", "a.com"), "kubectl", {TO, LABEL}),  # changed since: not forgiven
        (csa_route("a.com", "a.com"), "other", set()),  # only kubectl moves over
        (route("a.com"), "kubectl", set()),  # no annotation
        ({"metadata": {"annotations": {LAST: "{nope"}}}, "kubectl", set()),
    ],
)
def test_forgiven_paths(live: dict[str, Any], manager: str, expected: set[Any]) -> None:
    assert forgiven_paths(live, manager, ROUTE) == expected


def test_forgiven_conflicts_are_taken_over_only_when_all_are_forgiven() -> None:
    entries = {Owner("before-first-apply", "Update", "v"): owned(HOST, TO)}
    moved = change(route("a.com", "x"), route("b.com", "y"))
    after = record_apply(
        entries,
        moved,
        A,
        frozenset({HOST, TO}),
        "v",
        T1,
        force=False,
        forgiven=frozenset({HOST, TO}),
    )
    assert after[A].paths == {HOST, TO}
    assert Owner("before-first-apply", "Update", "v") not in after
    with pytest.raises(FieldManagerConflict, match=r"\.spec\.to\.name"):
        record_apply(
            entries,
            moved,
            A,
            frozenset({HOST, TO}),
            "v",
            T1,
            force=False,
            forgiven=frozenset({HOST}),
        )


def test_kubectl_rewrites_the_last_applied_annotation_an_object_has() -> None:
    config = {
        "metadata": {"name": "r", "annotations": {LAST: "old", "x": "1"}},
        "spec": {"host": "h"},
    }
    merged = csa_route("h", "a.com")
    synced, unchecked = synced_last_applied(merged, config, "kubectl")
    text = synced["metadata"]["annotations"][LAST]
    assert text == '{"metadata":{"annotations":{"x":"1"},"name":"r"},"spec":{"host":"h"}}\n'
    assert unchecked == {("f:metadata", "f:annotations", "f:" + LAST)}
    assert merged["metadata"]["annotations"][LAST] != text  # argument untouched
    assert synced_last_applied(merged, config, "other") == (merged, frozenset())
    assert synced_last_applied(route("h"), config, "kubectl") == (route("h"), frozenset())


# ---------------------------------------------------------------- request options


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        ("kubectl/v1.32.4 (linux/amd64) kubernetes/abc", "kubectl"),
        ("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator"),
        ("", ""),
        ("a\tb/1", "ab"),
        ("x" * 200, "x" * 128),
    ],
)
def test_the_default_manager_is_the_user_agent_s_first_word(agent: str, manager: str) -> None:
    assert manager_from_agent(agent) == manager
    assert field_manager("UpdateOptions", None, agent, apply=False) == manager


@pytest.mark.parametrize(
    ("given", "apply", "message"),
    [
        (None, True, "fieldManager: Required value: is required for apply patch"),
        ("", True, "fieldManager: Required value: is required for apply patch"),
        ("x" * 129, False, "fieldManager: Too long: may not be more than 128 bytes"),
        ("a\nb", True, 'fieldManager: Invalid value: "a\\nb": must only contain printable'),
    ],
)
def test_a_bad_field_manager_is_a_422_naming_it(
    given: str | None, apply: bool, message: str
) -> None:
    with pytest.raises(StatusError) as err:
        field_manager("PatchOptions", given, "kubectl/1", apply=apply)
    assert err.value.code == 422
    assert err.value.message.startswith('PatchOptions.meta.k8s.io "" is invalid: ' + message)
    assert err.value.details is not None
    assert err.value.details["causes"][0]["field"] == "fieldManager"


def test_force_is_a_boolean_for_apply_only() -> None:
    assert parse_force(None, apply=True) is False
    assert parse_force("true", apply=True) is True
    assert parse_force("false", apply=True) is False
    with pytest.raises(StatusError, match="must be a boolean"):
        parse_force("yes", apply=True)
    with pytest.raises(StatusError, match="force: Forbidden: may not be specified"):
        parse_force("true", apply=False)
    assert parse_force(None, apply=False) is False


def test_the_merge_and_ownership_modules_do_no_io() -> None:
    src = Path(__file__).resolve().parents[3] / "src"
    modules = ("apply", "apply_shapes", "fieldsets", "managed_fields", "ownership")
    pure = [f"shiftnet.apiserver.{m}" for m in modules]
    io = ["asyncio", "socket", "subprocess", "aiohttp", "httpx", "shiftnet.client"]
    io += ["shiftnet.store", "shiftnet.informer", "shiftnet.apiserver.verbs"]
    found = check(src, "shiftnet", pure, io)
    assert [v for v in found if v.rule == "pure-imports-io"] == []


def _entry(**fields: Any) -> dict[str, Any]:
    return {"manager": "m", "operation": "Update", "apiVersion": "v1", **fields}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([_entry(), _entry(operation="Apply", fieldsType="FieldsV1")], []),
        ([{}], []),  # the request to clear them
        ([_entry(manager="m" * 128, subresource="s" * 256)], []),
        ([_entry(manager="")], []),
        (
            [_entry(), _entry(operation="apply")],
            [
                'metadata.managedFields[1].operation: Invalid value: "apply": '
                "must be `Apply` or `Update`"
            ],
        ),
        (
            [_entry(operation=None)],
            ['metadata.managedFields[0].operation: Invalid value: "": must be `Apply` or `Update`'],
        ),
        (
            [_entry(fieldsType="FieldsV2")],
            ['metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`'],
        ),
        (
            [_entry(manager="é" * 65)],  # 130 bytes
            ["metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"],
        ),
        (
            [_entry(manager="a\tb\u200b")],
            [
                'metadata.managedFields[0].manager: Invalid value: "a\\tb\\u200b": '
                "invalid character U+0009 (at position 1)",
                'metadata.managedFields[0].manager: Invalid value: "a\\tb\\u200b": '
                "invalid character U+200B (at position 3)",
            ],
        ),
        (
            [_entry(subresource="s" * 257)],
            ["metadata.managedFields[0].subresource: Too long: may not be more than 256 bytes"],
        ),
    ],
)
def test_managed_fields_a_client_sends_are_checked_as_upstream(
    entries: list[dict[str, Any]], expected: list[str]
) -> None:
    assert [str(e) for e in entry_errors(entries)] == expected
