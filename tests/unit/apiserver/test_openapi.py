"""OpenAPI v2/v3 in the shape kubectl reads: names, GVK extensions, paths, merge keys."""

from __future__ import annotations

from typing import Any

import pytest

from shiftnet.api import KINDS
from shiftnet.apiserver.openapi import (
    definition_name,
    document_bytes,
    openapi_v2,
    openapi_v3,
    openapi_v3_index,
)
from shiftnet.errors import NotFound

ROUTE = "com.github.openshift.api.route.v1.Route"
SERVICE = "io.k8s.api.core.v1.Service"


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def resolve(doc: dict[str, Any], ref: str) -> dict[str, Any]:
    prefix = "#/components/schemas/" if "components" in doc else "#/definitions/"
    assert ref.startswith(prefix)
    schemas = doc["components"]["schemas"] if "components" in doc else doc["definitions"]
    found: dict[str, Any] = schemas[ref[len(prefix) :]]
    return found


def test_v2_names_definitions_as_kubernetes_and_openshift() -> None:
    doc = openapi_v2()
    assert doc["swagger"] == "2.0"
    defs = doc["definitions"]
    assert defs[ROUTE]["x-kubernetes-group-version-kind"] == [
        {"group": "route.openshift.io", "kind": "Route", "version": "v1"}
    ]
    assert defs[SERVICE]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Service", "version": "v1"}
    ]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in defs
    assert defs[f"{ROUTE}List"]["properties"]["items"]["items"] == {
        "$ref": f"#/definitions/{ROUTE}"
    }
    for ref in refs(doc):  # every reference resolves
        resolve(doc, ref)


def test_v2_has_paths_for_every_kind() -> None:
    paths = openapi_v2()["paths"]
    for kind in KINDS:
        group, _, version = kind.API_VERSION.rpartition("/")
        root = f"/apis/{group}/{version}" if group else f"/api/{version}"
        scope = f"{root}/namespaces/{{namespace}}" if kind.NAMESPACED else root
        item = paths[f"{scope}/{kind.RESOURCE}/{{name}}"]
        assert {"get", "put", "patch", "delete"} <= item.keys()
        assert item["get"]["x-kubernetes-group-version-kind"]["kind"] == kind.KIND
        assert set(paths[f"{scope}/{kind.RESOURCE}"]) >= {"get", "post", "delete"}
    assert "/api/v1/namespaces/{namespace}/pods/{name}/log" in paths
    assert "/apis/route.openshift.io/v1/namespaces/{namespace}/routes/{name}/status" in paths
    assert "/apis/route.openshift.io/v1/routes" in paths  # list across namespaces


def test_strategic_merge_patch_is_offered_for_core_kinds_only() -> None:
    """kubectl apply computes a strategic patch only where the PATCH operation accepts one;
    for Route it sends a merge patch, as for a custom resource."""
    svc = openapi_v3("v1")["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in svc["requestBody"]["content"]
    route_doc = openapi_v3("route.openshift.io/v1")
    route = route_doc["paths"]["/apis/route.openshift.io/v1/namespaces/{namespace}/routes/{name}"]
    assert set(route["patch"]["requestBody"]["content"]) == {
        "application/json-patch+json",
        "application/merge-patch+json",
    }
    v2 = openapi_v2()["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in v2["consumes"]


@pytest.mark.parametrize(
    "group_version", ["v1", "route.openshift.io/v1", "network.openshift.io/v1"]
)
def test_patch_operations_advertise_server_side_field_validation(group_version: str) -> None:
    """kubectl looks for fieldValidation among each PATCH operation's query parameters; found,
    it leaves unknown-field checks to the server instead of fetching the v2 protobuf."""
    doc = openapi_v3(group_version)
    patches = [item["patch"] for item in doc["paths"].values() if "patch" in item]
    assert patches
    for op in patches:
        names = {(p["name"], p["in"]) for p in op["parameters"]}
        assert ("fieldValidation", "query") in names
        assert op["x-kubernetes-group-version-kind"]["version"] == "v1"


def test_v3_index_points_at_each_group_version_with_a_content_hash() -> None:
    index = openapi_v3_index()
    assert list(index["paths"]) == [
        "api/v1",
        "apis/discovery.k8s.io/v1",
        "apis/network.openshift.io/v1",
        "apis/networking.k8s.io/v1",
        "apis/route.openshift.io/v1",
    ]
    url = index["paths"]["apis/route.openshift.io/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/route.openshift.io/v1?hash=")
    assert openapi_v3("apis/route.openshift.io/v1") == openapi_v3("route.openshift.io/v1")
    assert openapi_v3("api/v1") == openapi_v3("v1")


def explain(doc: dict[str, Any], path: str, fields: list[str]) -> dict[str, Any]:
    """What ``kubectl explain`` does: GVK from the path's operation, schema by GVK, then fields."""
    gvk = doc["paths"][path]["get"]["x-kubernetes-group-version-kind"]
    (schema,) = [
        s
        for s in doc["components"]["schemas"].values()
        if gvk in s.get("x-kubernetes-group-version-kind", [])
    ]
    for name in fields:
        prop = schema["properties"][name]
        target = prop["allOf"][0] if "allOf" in prop else prop
        schema = resolve(doc, target["$ref"]) if "$ref" in target else target
        schema = {**schema, "fieldDescription": prop.get("description", "")}
    return schema


def test_explain_route_spec_tls_finds_fields_with_descriptions() -> None:
    doc = openapi_v3("route.openshift.io/v1")
    tls = explain(doc, "/apis/route.openshift.io/v1/namespaces/{namespace}/routes", ["spec", "tls"])
    assert tls["fieldDescription"]
    assert tls["required"] == ["termination"]
    assert set(tls["properties"]) == {
        "caCertificate",
        "certificate",
        "destinationCACertificate",
        "externalCertificate",
        "insecureEdgeTerminationPolicy",
        "key",
        "termination",
    }
    assert all(p["description"] for p in tls["properties"].values())
    assert tls["properties"]["termination"]["enum"] == ["edge", "passthrough", "reencrypt"]


def test_every_model_field_is_in_the_schema() -> None:
    """kubectl's and the server's strict validation flag any field the schema does not list, so
    the schema must list exactly the fields the models accept."""
    defs = openapi_v2()["definitions"]
    for kind in KINDS:
        props = defs[definition_name(kind)]["properties"]
        assert set(props) == {i.alias or n for n, i in kind.model_fields.items()}


def test_core_lists_carry_their_merge_keys() -> None:
    defs = openapi_v3("v1")["components"]["schemas"]
    pod_spec = defs["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert pod_spec["containers"]["x-kubernetes-patch-merge-key"] == "name"
    assert pod_spec["containers"]["x-kubernetes-patch-strategy"] == "merge"
    container = defs["io.k8s.api.core.v1.Container"]["properties"]
    assert container["ports"]["x-kubernetes-patch-merge-key"] == "containerPort"
    ports = defs["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"]
    assert ports["x-kubernetes-patch-merge-key"] == "port"
    meta = defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
    assert meta["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": meta["labels"]["description"],
    }
    route = openapi_v3("route.openshift.io/v1")["components"]["schemas"]
    spec = route["com.github.openshift.api.route.v1.RouteSpec"]["properties"]
    assert "x-kubernetes-patch-merge-key" not in spec["alternateBackends"]


def test_documents_are_deterministic() -> None:
    assert document_bytes(openapi_v2()) == document_bytes(openapi_v2())
    assert openapi_v3_index() == openapi_v3_index()


def test_unknown_group_version_is_not_found() -> None:
    with pytest.raises(NotFound, match='"apps/v1" not found'):
        openapi_v3("apps/v1")
