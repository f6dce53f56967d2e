"""meta.k8s.io/v1 Tables: the columns ``shiftnet get`` prints, in the shape kubectl reads."""

from __future__ import annotations

import datetime as dt

import pytest

from shiftnet.api import Pod, Route, Service, kind_for_resource, parse_object
from shiftnet.apiserver.tables import include_object_policy, table_for
from shiftnet.cli.tables import table_rows
from shiftnet.errors import InvalidInput

NOW = dt.datetime(2026, 1, 2, 0, 0, 0, tzinfo=dt.UTC)


def service() -> Service:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "web",
                "namespace": "shop",
                "labels": {"app": "web"},
                "resourceVersion": "7",
                "creationTimestamp": "2026-01-01T21:55:00Z",
            },
            "spec": {
                "clusterIP": "127.30.0.5",
                "ports": [{"port": 80, "targetPort": 8080}],
                "selector": {"app": "web"},
            },
        }
    )
    assert isinstance(obj, Service)
    return obj


def pod() -> Pod:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-1",
                "namespace": "shop",
                "creationTimestamp": "2026-01-01T23:56:40Z",
            },
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {
                "phase": "Running",
                "podIP": "127.10.0.2",
                "containerStatuses": [
                    {"name": "a", "ready": True, "restartCount": 2},
                    {"name": "b", "ready": False, "restartCount": 1},
                ],
            },
        }
    )
    assert isinstance(obj, Pod)
    return obj


def test_service_table_has_kubectls_columns_and_wide_ones_at_priority_1() -> None:
    table = table_for(Service, [service()], include_object="Metadata", now=NOW)
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    defs = table["columnDefinitions"]
    assert [(d["name"], d["priority"]) for d in defs] == [
        ("Name", 0),
        ("Type", 0),
        ("Cluster-IP", 0),
        ("External-IP", 0),
        ("Port(s)", 0),
        ("Age", 0),
        ("Selector", 1),
    ]
    assert defs[0]["format"] == "name"
    assert all(d["type"] == "string" and d["description"] for d in defs)
    (row,) = table["rows"]
    assert row["cells"] == [
        "web",
        "ClusterIP",
        "127.30.0.5",
        "<none>",
        "80/TCP",
        "125m",
        "app=web",
    ]


def test_pod_cells_as_kubectl_prints_them() -> None:
    (row,) = table_for(Pod, [pod()], include_object="None", now=NOW)["rows"]
    assert row == {"cells": ["web-1", "1/2", "Running", "3", "3m20s", "127.10.0.2", "n1"]}


def test_metadata_rows_carry_partial_object_metadata() -> None:
    (row,) = table_for(Service, [service()], now=NOW)["rows"]
    assert row["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {"app": "web"},
            "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T21:55:00Z",
        },
    }


def test_object_rows_carry_the_whole_object() -> None:
    svc = service()
    (row,) = table_for(Service, [svc], include_object="Object", now=NOW)["rows"]
    assert row["object"] == svc.to_dict()
    assert row["object"]["spec"]["ports"][0]["targetPort"] == 8080


def test_list_metadata_carries_resource_version_and_continue() -> None:
    table = table_for(Service, [], now=NOW, resource_version="42", continue_token="abc")
    assert table["metadata"] == {"resourceVersion": "42", "continue": "abc"}
    assert table["rows"] == []
    assert table_for(Service, [], now=NOW)["metadata"] == {}


@pytest.mark.parametrize("resource", ["pods", "services", "routes", "nodes", "hostsubnets"])
def test_server_and_cli_print_the_same_columns(resource: str) -> None:
    """One definition: kubectl's headings (upper-cased names) equal ``shiftnet get -o wide``."""
    cls = kind_for_resource(resource)
    names = [d["name"].upper() for d in table_for(cls, [], now=NOW)["columnDefinitions"]]
    header, _ = table_rows(cls, [], NOW, wide=True)
    assert names == header
    plain = [
        d["name"].upper()
        for d in table_for(cls, [], now=NOW)["columnDefinitions"]
        if d["priority"] == 0
    ]
    assert plain == table_rows(cls, [], NOW)[0]


def test_route_row_matches_the_cli_row() -> None:
    route = parse_object(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "host": "www.example.com",
                "path": "/api",
                "to": {"kind": "Service", "name": "web"},
                "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
            },
        }
    )
    (row,) = table_for(Route, [route], now=NOW)["rows"]
    assert row["cells"] == table_rows(Route, [route], NOW, wide=True)[1][0]
    assert row["cells"] == [
        "web",
        "www.example.com",
        "/api",
        "web",
        "<all>",
        "edge/Redirect",
        "None",
    ]


@pytest.mark.parametrize(
    ("given", "policy"),
    [(None, "Metadata"), ("", "Metadata"), ("None", "None"), ("Object", "Object")],
)
def test_include_object_defaults_to_metadata(given: str | None, policy: str) -> None:
    assert include_object_policy(given) == policy


def test_unknown_include_object_is_one_sentence() -> None:
    with pytest.raises(InvalidInput, match=r'includeObject: Unsupported value: "Full"'):
        include_object_policy("Full")
