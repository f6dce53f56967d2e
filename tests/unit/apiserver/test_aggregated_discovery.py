"""Aggregated discovery: the documents, the Accept negotiation and ETag matching (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.import_rules import check

from shiftnet.apiserver.aggregated_discovery import (
    AGGREGATED_VERSIONS,
    AggregatedVersion,
    document_bytes,
    group_discovery_list,
    media_type,
)
from shiftnet.apiserver.discovery import group_list, resource_list
from shiftnet.apiserver.discovery_accept import etag_matches, etag_of, negotiate
from shiftnet.apiserver.resources import group_versions

KUBECTL_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
V3 = "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"
PROTOBUF_V2 = (
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (KUBECTL_ACCEPT, "v2"),  # kubectl 1.32 / client-go
        (f"{V2BETA1},application/json", "v2beta1"),  # an older client-go
        (V2, "v2"),
        (V2BETA1, "v2beta1"),
        ("application/json", None),  # the Python client, plain JSON
        ("application/json, */*", None),  # client-go's per-group requests
        ("*/*", None),
        ("", None),  # curl without -H
        ("application/*", None),
        # parameters in any order, spaces, quoted values, case of the type
        ("application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io", "v2"),
        ('Application/JSON;g="apidiscovery.k8s.io";v="v2";as="APIGroupDiscoveryList"', "v2"),
        # weights: the highest wins, the first of equals
        (f"application/json,{V2};q=0.5", None),
        (f"{V2};q=0.5,{V2BETA1};q=0.9,application/json;q=0.1", "v2beta1"),
        (f"{V2BETA1},{V2}", "v2beta1"),
        (f"{V2};q=0,application/json", None),  # q=0 refuses it
        (f"{V2};q=high,application/json", None),  # an unreadable weight accepts nothing
        # forms the server does not write fall through to what else is acceptable
        ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList", None),
        (
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            None,
        ),
        (
            f"application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,{V2BETA1}",
            "v2beta1",
        ),
        ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", None),
        ("application/json;g=other.example.com;v=v2;as=APIGroupDiscoveryList", None),
        ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupList", None),
        ("application/yaml", None),
    ],
)
def test_accept_negotiation(accept: str, expected: str | None) -> None:
    assert negotiate(accept) == expected


@pytest.mark.parametrize(
    ("if_none_match", "matches"),
    [
        ('"abc"', True),
        ('W/"abc"', True),  # If-None-Match compares weakly
        ('"x", "abc"', True),
        ("*", True),
        ('"abd"', False),
        ("abc", False),  # unquoted is not the tag
        ("", False),
        ('"x",,"y"', False),
    ],
)
def test_if_none_match(if_none_match: str, matches: bool) -> None:
    assert etag_matches(if_none_match, '"abc"') is matches


def test_etag_is_a_quoted_hash_of_the_body() -> None:
    body = document_bytes(group_discovery_list("/apis", "v2"))
    tag = etag_of(body)
    assert tag.startswith('"') and tag.endswith('"') and len(tag) == 66
    assert tag == etag_of(document_bytes(group_discovery_list("/apis", "v2")))
    assert tag != etag_of(document_bytes(group_discovery_list("/apis", "v2beta1")))


def test_media_types_name_group_version_and_kind() -> None:
    assert media_type("v2") == V2
    assert media_type("v2beta1") == V2BETA1


def _as_legacy(aggregated: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Turn an aggregated list into unaggregated resource lists the way client-go does."""
    out: dict[str, list[dict[str, Any]]] = {}
    for group in aggregated["items"]:
        name = group["metadata"]["name"]
        for v in group["versions"]:
            assert v["freshness"] == "Current"
            gv = f"{name}/{v['version']}" if name else v["version"]
            entries = out.setdefault(gv, [])
            for r in v["resources"]:
                namespaced = r["scope"] == "Namespaced"
                assert r["scope"] in ("Namespaced", "Cluster")
                assert r["responseKind"]["group"] == name
                assert r["responseKind"]["version"] == v["version"]
                entry = {
                    "name": r["resource"],
                    "singularName": r["singularResource"],
                    "namespaced": namespaced,
                    "kind": r["responseKind"]["kind"],
                    "verbs": r["verbs"],
                }
                for key in ("shortNames", "categories"):
                    if key in r:
                        entry[key] = r[key]
                entries.append(entry)
                for sub in r.get("subresources", []):
                    entries.append(
                        {
                            "name": f"{r['resource']}/{sub['subresource']}",
                            "singularName": "",
                            "namespaced": namespaced,
                            "kind": sub["responseKind"]["kind"],
                            "verbs": sub["verbs"],
                        }
                    )
    return out


@pytest.mark.parametrize("version", AGGREGATED_VERSIONS)
def test_aggregated_lists_exactly_what_the_unaggregated_documents_list(
    version: AggregatedVersion,
) -> None:
    core = group_discovery_list("/api", version)
    named = group_discovery_list("/apis", version)
    for doc in (core, named):
        assert doc["kind"] == "APIGroupDiscoveryList"
        assert doc["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    assert [g["metadata"]["name"] for g in core["items"]] == [""]
    # the named groups in the order /apis lists them, preferred version first
    assert [g["metadata"]["name"] for g in named["items"]] == [
        g["name"] for g in group_list()["groups"]
    ]
    for item, legacy in zip(named["items"], group_list()["groups"], strict=True):
        assert [v["version"] for v in item["versions"]] == [
            v["version"] for v in legacy["versions"]
        ]
    converted = {**_as_legacy(core), **_as_legacy(named)}
    served = {
        f"{g}/{v}" if g else v: (g, v) for g, versions in group_versions().items() for v in versions
    }
    assert set(converted) == set(served)
    for gv, (g, v) in served.items():
        legacy = resource_list(g, v)
        assert legacy is not None
        assert converted[gv] == legacy["resources"], gv


def test_aggregated_entries_carry_short_names_categories_and_subresources() -> None:
    core = group_discovery_list("/api", "v2")["items"][0]["versions"][0]["resources"]
    by_name = {r["resource"]: r for r in core}
    services = by_name["services"]
    assert services["shortNames"] == ["svc"] and services["categories"] == ["all"]
    assert services["scope"] == "Namespaced" and services["singularResource"] == "service"
    assert services["responseKind"] == {"group": "", "version": "v1", "kind": "Service"}
    pods = {s["subresource"]: s["verbs"] for s in by_name["pods"]["subresources"]}
    assert pods == {"log": ["get"], "status": ["get", "patch", "update"]}
    assert by_name["namespaces"]["scope"] == "Cluster"
    assert "subresources" not in by_name["endpoints"]


def test_discovery_modules_do_no_io() -> None:
    src = Path(__file__).resolve().parents[3] / "src"
    modules = ("aggregated_discovery", "discovery_accept", "discovery", "resources")
    pure = [f"shiftnet.apiserver.{m}" for m in modules]
    io = ["asyncio", "socket", "subprocess", "aiohttp", "httpx", "shiftnet.client"]
    io += ["shiftnet.store", "shiftnet.informer"]
    found = check(src, "shiftnet", pure, io)
    assert [v for v in found if v.rule == "pure-imports-io"] == []
