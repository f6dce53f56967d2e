"""A Table made from stored objects is the Table of the objects as the API shows them."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from shiftnet.api import Pod, Route, Service
from shiftnet.api.base import Resource
from shiftnet.apiserver.tables import table_for, table_of_stored
from shiftnet.apiserver.wire import omit_empty, out_object

NOW = dt.datetime(2026, 1, 2, 0, 0, 0, tzinfo=dt.UTC)

STORED: list[tuple[type[Resource], dict[str, Any]]] = [
    (
        Route,
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {
                "name": "web",
                "namespace": "shop",
                "labels": {"app": "web", "empty": ""},
                "annotations": {},
                "uid": "u-1",
                "resourceVersion": "12",
                "generation": 1,
                "creationTimestamp": "2026-01-01T23:58:59.987654Z",
            },
            "spec": {
                "host": "web.example.com",
                "path": "",
                "to": {"kind": "Service", "name": "web", "weight": 100},
                "alternateBackends": [],
                "port": {"targetPort": "http"},
                "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
                "wildcardPolicy": "None",
            },
            "status": {"ingress": []},
        },
    ),
    (
        Service,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "web",
                "namespace": "shop",
                "creationTimestamp": "2026-01-01T21:55:00.5Z",
            },
            "spec": {
                "clusterIP": "127.30.0.5",
                "ports": [{"port": 80, "targetPort": 8080, "name": ""}],
                "selector": {"app": "web"},
            },
        },
    ),
    (
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "shop", "deletionTimestamp": ""},
            "spec": {"containers": [{"name": "a"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "127.10.0.2"},
        },
    ),
]


@pytest.mark.parametrize(("kind", "stored"), STORED, ids=lambda v: getattr(v, "KIND", ""))
@pytest.mark.parametrize("include", ["Metadata", "Object", "None"])
def test_the_table_of_stored_objects_is_the_table_of_the_shown_objects(
    kind: type[Resource], stored: dict[str, Any], include: Any
) -> None:
    before = copy.deepcopy(stored)
    shown = out_object(stored)
    expected = table_for(
        kind, [kind.model_validate(shown)], include_object=include, now=NOW, resource_version="9"
    )
    if include == "Object":
        expected["rows"][0]["object"] = shown
    got = table_of_stored(kind, [stored], include_object=include, now=NOW, resource_version="9")
    assert json.loads(json.dumps(got)) == json.loads(json.dumps(expected))
    assert stored == before  # the stored object is left as it was


def _reference_omit_empty(value: Any) -> Any:
    """The plain definition: drop "", [] and {} everywhere but inside the user's maps."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in {"labels", "annotations", "selector", "nodeSelector", "data"} and isinstance(
                item, dict
            ):
                if item:
                    out[key] = dict(item)
                continue
            kept = _reference_omit_empty(item)
            if kept not in ("", [], {}):
                out[key] = kept
        return out
    if isinstance(value, list):
        return [_reference_omit_empty(v) for v in value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"a": "", "b": [], "c": {}, "d": 0, "e": False, "f": None, "g": 1.5},
        {"labels": {"x": ""}, "selector": {}, "spec": {"x": {"y": {"z": ""}}, "l": [{}, "", 0]}},
        {"data": {"k": ""}, "nested": {"annotations": {"a": ""}, "list": [[], [{"a": ""}]]}},
        [{"a": ""}, [], "", {"labels": {}}],
    ],
)
def test_omit_empty_drops_what_go_omits(value: Any) -> None:
    assert omit_empty(value) == _reference_omit_empty(value)
