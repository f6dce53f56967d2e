"""JSON patch (RFC 6902), merge patch (RFC 7386) and strategic merge patch, case by case."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from shiftnet.api import Endpoints, Node, Pod, Route, Service, parse_object
from shiftnet.apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    json_equal,
)
from shiftnet.errors import InvalidPatch, PatchNotApplicable

# ---------------------------------------------------------------- JSON patch

DOC = {"metadata": {"name": "web", "labels": {"a/b": "1", "t~x": "2"}}, "items": [1, 2, 3]}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/spec", "value": {"x": 1}}], {**DOC, "spec": {"x": 1}}),
        ([{"op": "add", "path": "/items/0", "value": 0}], {**DOC, "items": [0, 1, 2, 3]}),
        ([{"op": "add", "path": "/items/3", "value": 4}], {**DOC, "items": [1, 2, 3, 4]}),
        ([{"op": "add", "path": "/items/-", "value": 4}], {**DOC, "items": [1, 2, 3, 4]}),
        ([{"op": "add", "path": "", "value": {"x": 1}}], {"x": 1}),
        ([{"op": "remove", "path": "/items/1"}], {**DOC, "items": [1, 3]}),
        ([{"op": "replace", "path": "/items/1", "value": 9}], {**DOC, "items": [1, 9, 3]}),
        (
            [{"op": "remove", "path": "/metadata/labels/a~1b"}],
            {**DOC, "metadata": {"name": "web", "labels": {"t~x": "2"}}},
        ),
        (
            [{"op": "replace", "path": "/metadata/labels/t~0x", "value": "3"}],
            {**DOC, "metadata": {"name": "web", "labels": {"a/b": "1", "t~x": "3"}}},
        ),
        (
            [{"op": "move", "from": "/metadata/name", "path": "/name"}],
            {**DOC, "metadata": {"labels": {"a/b": "1", "t~x": "2"}}, "name": "web"},
        ),
        (
            [{"op": "copy", "from": "/items", "path": "/copy"}],
            {**DOC, "copy": [1, 2, 3]},
        ),
        (
            [
                {"op": "test", "path": "/metadata/name", "value": "web"},
                {"op": "replace", "path": "/metadata/name", "value": "api"},
            ],
            {**DOC, "metadata": {"name": "api", "labels": {"a/b": "1", "t~x": "2"}}},
        ),
        ([{"op": "test", "path": "/items", "value": [1.0, 2, 3]}], DOC),
        ([], DOC),
    ],
)
def test_json_patch_operations(ops: list[dict[str, Any]], expected: Any) -> None:
    before = copy.deepcopy(DOC)
    assert apply_json_patch(DOC, ops) == expected
    assert before == DOC  # the input is never changed


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [{"op": "remove", "path": "/spec"}],
            'operation 1 (remove "/spec"): "/spec" does not exist',
        ),
        ([{"op": "replace", "path": "/spec/x", "value": 1}], '"/spec/x" does not exist'),
        ([{"op": "add", "path": "/items/4", "value": 1}], 'index 4 in "/items/4" is past the end'),
        ([{"op": "remove", "path": "/items/01"}], '"01" in "/items/01" is not an index'),
        ([{"op": "remove", "path": "/items/-"}], '"-" in "/items/-" is not an index'),
        (
            [{"op": "test", "path": "/items/0", "value": True}],
            'the value at "/items/0" is not true',
        ),
        ([{"op": "test", "path": "/metadata/name", "value": "api"}], 'is not "api"'),
        (
            [{"op": "move", "from": "/metadata", "path": "/metadata/inner"}],
            'cannot move "/metadata" into its own child',
        ),
    ],
)
def test_json_patch_that_cannot_apply_is_422_and_changes_nothing(
    ops: list[dict[str, Any]], message: str
) -> None:
    first = {"op": "replace", "path": "/metadata/name", "value": "changed"}
    before = copy.deepcopy(DOC)
    with pytest.raises(PatchNotApplicable, match="JSON patch operation") as err:
        apply_json_patch(DOC, [first, *ops])
    assert message.replace("operation 1", "operation 2") in str(err.value)
    assert before == DOC


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "add"}, "a JSON patch must be a list of operations"),
        (["add"], 'JSON patch operation 1 must be an object, got "add"'),
        ([{"path": "/a"}], 'JSON patch operation 1 has no "op"'),
        ([{"op": "frob", "path": "/a"}], 'op "frob" is not one of add, remove'),
        ([{"op": "add", "value": 1}], 'JSON patch operation 1 (add) has no "path"'),
        ([{"op": "add", "path": "a", "value": 1}], 'path "a" must be empty or begin with "/"'),
        ([{"op": "add", "path": "/a"}], 'JSON patch operation 1 (add "/a") has no "value"'),
        ([{"op": "copy", "path": "/a"}], 'has no "from"'),
        ([{"op": "remove", "path": "/a~2"}], 'has "~" not followed by 0 or 1'),
    ],
)
def test_malformed_json_patch_is_400(ops: Any, message: str) -> None:
    with pytest.raises(InvalidPatch) as err:
        apply_json_patch(DOC, ops)
    assert message in str(err.value)


def test_json_equality_keeps_booleans_apart_from_numbers() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal("1", 1)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


# ---------------------------------------------------------------- merge patch


@pytest.mark.parametrize(
    ("doc", "patch", "expected"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": ["c", "d"]}, {"a": ["c", "d"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({"a": "x"}, {"a": {"b": {"c": None, "d": 1}}}, {"a": {"b": {"d": 1}}}),
        ({}, {}, {}),
    ],
)
def test_merge_patch(doc: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(doc)
    assert apply_merge_patch(doc, patch) == expected
    assert doc == before


@pytest.mark.parametrize("patch", [["a"], "x", 1, None])
def test_merge_patch_must_be_an_object(patch: Any) -> None:
    with pytest.raises(InvalidPatch, match="a merge patch must be a JSON object"):
        apply_merge_patch({"a": 1}, patch)


# ---------------------------------------------------------------- strategic merge patch


def live_service() -> dict[str, Any]:
    """A Service as the server holds it after ``kubectl apply`` (defaults filled in)."""
    applied = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"app": "web", "tier": "front"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "resourceVersion": "12",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied) + "\n"
            },
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "127.30.0.7",
            "sessionAffinity": "None",
            "selector": {"app": "web", "tier": "front"},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
        },
    }


def test_kubectl_apply_edit_of_a_service() -> None:
    """The three-way patch kubectl apply sends when a manifest changes a port, adds one and
    drops a selector key: changed fields plus merge keys, ``$setElementOrder``, nulls."""
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}\n"}
        },
        "spec": {
            "$setElementOrder/ports": [{"port": 80}, {"port": 443}],
            "ports": [
                {"port": 80, "targetPort": 8081},
                {"name": "https", "port": 443, "targetPort": 8443},
            ],
            "selector": {"tier": None},
        },
    }
    out = apply_strategic_merge_patch(live_service(), patch, Service)
    assert out["spec"]["ports"] == [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8081},
        {"name": "https", "port": 443, "targetPort": 8443},
    ]
    assert out["spec"]["selector"] == {"app": "web"}
    assert out["spec"]["clusterIP"] == "127.30.0.7"  # fields the manifest never had survive
    assert out["metadata"]["annotations"] == patch["metadata"]["annotations"]
    svc = parse_object(out)
    assert isinstance(svc, Service)
    assert [p.port for p in svc.spec.ports] == [80, 443]


def test_kubectl_apply_removing_a_service_port() -> None:
    live = apply_strategic_merge_patch(
        live_service(),
        {"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}},
        Service,
    )
    assert [p["port"] for p in live["spec"]["ports"]] == [443, 80]  # no order given: new first
    patch = {
        "spec": {
            "$setElementOrder/ports": [{"port": 443}],
            "ports": [{"$patch": "delete", "port": 80}],
        }
    }
    out = apply_strategic_merge_patch(live, patch, Service)
    assert out["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": 8443}]


def pod(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "finalizers": ["a", "b"]},
        "spec": {"containers": containers},
    }


APP = {
    "name": "app",
    "image": "web:1",
    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
}
SIDE = {"name": "side", "image": "proxy:1"}


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (  # nested merge: containers by name, env by name, ports by containerPort
            {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                            "ports": [{"containerPort": 9090}],
                        }
                    ]
                }
            },
            [
                {
                    **APP,
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "B", "value": "3"},
                        {"name": "C", "value": "4"},
                    ],
                    "ports": [{"containerPort": 9090}, {"containerPort": 8080, "protocol": "TCP"}],
                },
                SIDE,
            ],
        ),
        (  # $patch: delete removes the item with that key
            {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
            [APP],
        ),
        (  # $patch: replace in a list: the rest of the list is the whole list
            {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}},
            [{"name": "only", "image": "x"}],
        ),
        (  # $patch: replace on a map inside an item
            {"spec": {"containers": [{"name": "app", "env": [{"name": "Z", "value": "9"}]}]}},
            [
                {
                    **APP,
                    "env": [
                        {"name": "Z", "value": "9"},
                        {"name": "A", "value": "1"},
                        {"name": "B", "value": "2"},
                    ],
                },
                SIDE,
            ],
        ),
        (  # a null inside an item deletes that field only
            {"spec": {"containers": [{"name": "app", "image": None}]}},
            [{k: v for k, v in APP.items() if k != "image"}, SIDE],
        ),
        (  # $setElementOrder reorders without changing contents
            {"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}]}},
            [SIDE, APP],
        ),
    ],
)
def test_pod_containers_merge_by_name(patch: dict[str, Any], expected: list[Any]) -> None:
    doc = pod([APP, SIDE])
    before = copy.deepcopy(doc)
    out = apply_strategic_merge_patch(doc, patch, Pod)
    assert out["spec"]["containers"] == expected
    assert doc == before


def test_map_directives_replace_and_delete() -> None:
    doc = live_service()
    out = apply_strategic_merge_patch(
        doc, {"spec": {"selector": {"$patch": "replace", "app": "api"}}}, Service
    )
    assert out["spec"]["selector"] == {"app": "api"}
    out = apply_strategic_merge_patch(doc, {"spec": {"selector": {"$patch": "delete"}}}, Service)
    assert out["spec"]["selector"] == {}
    out = apply_strategic_merge_patch(
        doc, {"spec": {"sessionAffinityConfig": {"$patch": "delete"}}}, Service
    )
    assert "sessionAffinityConfig" not in out["spec"]


def test_retain_keys_clears_the_fields_it_does_not_name() -> None:
    doc = pod([APP])
    doc["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    patch = {
        "spec": {
            "volumes": [
                {"name": "data", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/d"}}
            ]
        }
    }
    out = apply_strategic_merge_patch(doc, patch, Pod)
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/d"}}]
    bad = {"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"], "secret": {}}]}}
    with pytest.raises(InvalidPatch, match='field "secret" is patched but not in \\$retainKeys'):
        apply_strategic_merge_patch(doc, bad, Pod)


def test_primitive_merge_lists_and_delete_from_primitive_list() -> None:
    doc = pod([APP])
    out = apply_strategic_merge_patch(
        doc,
        {
            "metadata": {
                "$setElementOrder/finalizers": ["a", "c"],
                "$deleteFromPrimitiveList/finalizers": ["b"],
                "finalizers": ["c"],
            }
        },
        Pod,
    )
    assert out["metadata"]["finalizers"] == ["a", "c"]
    out = apply_strategic_merge_patch(doc, {"metadata": {"finalizers": ["b", "z"]}}, Pod)
    assert out["metadata"]["finalizers"] == ["a", "b", "z"]  # a stays before b, as it was


def node(conditions: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    }


def test_node_status_conditions_merge_by_type() -> None:
    doc = node(
        [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": "False", "reason": "Starting"},
        ]
    )
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": None}]}}
    out = apply_strategic_merge_patch(doc, patch, Node)
    assert out["status"]["conditions"] == [
        {"type": "MemoryPressure", "status": "False"},
        {"type": "Ready", "status": "True"},
    ]
    assert out["status"]["addresses"] == doc["status"]["addresses"]
    assert isinstance(parse_object(out), Node)


@pytest.mark.parametrize(
    ("live", "order", "expected"),
    [
        # server-only items keep their place relative to the items the order names
        ([1, 3, 4, 2, 9], [4, 2, 3, 1], [4, 2, 3, 1, 9]),
        ([1, 2, 9, 3, 4], [2, 1, 4, 3], [2, 1, 9, 4, 3]),
        ([1, 2, 7, 9, 8, 3, 4], [2, 1, 4, 3], [2, 1, 7, 9, 8, 4, 3]),
    ],
)
def test_set_element_order_with_server_only_items(
    live: list[int], order: list[int], expected: list[int]
) -> None:
    doc = node([{"type": f"T{n}", "status": "True"} for n in live])
    patch = {"status": {"$setElementOrder/conditions": [{"type": f"T{n}"} for n in order]}}
    out = apply_strategic_merge_patch(doc, patch, Node)
    assert [c["type"] for c in out["status"]["conditions"]] == [f"T{n}" for n in expected]


def test_endpoints_subsets_are_replaced_whole_as_kubernetes_does() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "web", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": "127.10.0.2"}], "ports": [{"port": 8080}]}],
    }
    patch = {"subsets": [{"addresses": [{"ip": "127.10.0.3"}], "ports": [{"port": 8080}]}]}
    out = apply_strategic_merge_patch(doc, patch, Endpoints)
    assert out["subsets"] == patch["subsets"]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            {"spec": {"ports": [{"targetPort": 1}]}},
            'spec.ports: list item {"targetPort": 1} has no merge key "port"',
        ),
        (
            {"spec": {"ports": [{"port": 80, "$patch": "merge"}]}},
            'spec.ports: $patch "merge" in a list',
        ),
        ({"spec": {"$patch": "frob"}}, 'spec: $patch "frob" must be "replace" or "delete"'),
        ({"spec": {"$frob": 1}}, 'spec.$frob: unknown patch directive "$frob"'),
        (
            {"spec": {"$setElementOrder/ports": [{"port": 80}], "ports": [{"port": 443}]}},
            "spec.ports: the list does not follow its $setElementOrder",
        ),
        (
            {"spec": {"$deleteFromPrimitiveList/externalIPs": "1.2.3.4"}},
            "spec.externalIPs: $deleteFromPrimitiveList needs a list of values",
        ),
        (["not", "an", "object"], "a strategic merge patch must be a JSON object"),
    ],
)
def test_bad_strategic_merge_patch_is_one_sentence(patch: Any, message: str) -> None:
    with pytest.raises(InvalidPatch) as err:
        apply_strategic_merge_patch(live_service(), patch, Service)
    assert message in str(err.value)


def live_route() -> dict[str, Any]:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "5"},
        "spec": {
            "host": "www.example.com",
            "path": "/app",
            "to": {"kind": "Service", "name": "web", "weight": 100},
            "alternateBackends": [{"kind": "Service", "name": "old", "weight": 50}],
            "tls": {"termination": "edge"},
            "wildcardPolicy": "None",
        },
        "status": {"ingress": [{"routerName": "default", "host": "www.example.com"}]},
    }


def test_kubectl_apply_edit_of_a_route_is_a_merge_patch() -> None:
    """Route is not in kubectl's built-in scheme, so apply sends a three-way JSON merge patch:
    changed fields, nulls for dropped ones, and lists whole."""
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}\n"}
        },
        "spec": {
            "alternateBackends": [{"kind": "Service", "name": "new", "weight": 25}],
            "path": None,
            "tls": {"insecureEdgeTerminationPolicy": "Redirect"},
        },
    }
    for apply in (apply_merge_patch, lambda d, p: apply_strategic_merge_patch(d, p, Route)):
        out = apply(live_route(), patch)
        assert out["spec"] == {
            "host": "www.example.com",
            "to": {"kind": "Service", "name": "web", "weight": 100},
            "alternateBackends": [{"kind": "Service", "name": "new", "weight": 25}],
            "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
            "wildcardPolicy": "None",
        }
        assert out["status"] == live_route()["status"]
        assert isinstance(parse_object(out), Route)
