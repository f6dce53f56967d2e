"""Aggregated discovery documents (``apidiscovery.k8s.io`` v2 and v2beta1), pure.

One answer to ``/api`` or ``/apis`` lists every resource of every group
version, so a client learns the whole API in two requests instead of one more
per group version. The entries are read from the same resource table as the
unaggregated documents of :mod:`shiftnet.apiserver.discovery`, so both forms
always list the same resources, verbs, short names and subresources.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from shiftnet.apiserver.resources import ResourceInfo, group_versions, resources_in

DISCOVERY_GROUP = "apidiscovery.k8s.io"
DISCOVERY_KIND = "APIGroupDiscoveryList"
AggregatedVersion = Literal["v2", "v2beta1"]
AGGREGATED_VERSIONS: tuple[AggregatedVersion, ...] = ("v2", "v2beta1")
# The two roots: "/api" holds the core group (named ""), "/apis" every named group.
Root = Literal["/api", "/apis"]


def media_type(version: AggregatedVersion) -> str:
    """The ``Content-Type`` of an aggregated answer, which clients check before decoding it."""
    return f"application/json;g={DISCOVERY_GROUP};v={version};as={DISCOVERY_KIND}"


def _kind(r: ResourceInfo) -> dict[str, str]:
    return {"group": r.group, "version": r.version, "kind": r.kind}


def resource_entry(r: ResourceInfo) -> dict[str, Any]:
    """One ``APIResourceDiscovery``: the resource with its subresources nested in it."""
    out: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": _kind(r),
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.model.SHORT_NAMES:
        out["shortNames"] = list(r.model.SHORT_NAMES)
    if r.categories:
        out["categories"] = list(r.categories)
    if r.subresources:
        out["subresources"] = [
            {"subresource": sub, "responseKind": _kind(r), "verbs": list(verbs)}
            for sub, verbs in sorted(r.subresources.items())
        ]
    return out


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = []
    for version in versions:
        served = sorted(resources_in(name, version), key=lambda r: r.plural)
        entries.append(
            {
                "version": version,
                "resources": [resource_entry(r) for r in served],
                "freshness": "Current",
            }
        )
    return {"metadata": {"name": name}, "versions": entries}


def group_discovery_list(root: Root, version: AggregatedVersion) -> dict[str, Any]:
    """``GET /api`` or ``/apis`` as an ``APIGroupDiscoveryList``: groups in the order
    ``/apis`` lists them, versions preferred first, resources by name."""
    items = [
        _group(name, versions)
        for name, versions in group_versions().items()
        if (name == "") == (root == "/api")
    ]
    return {
        "kind": DISCOVERY_KIND,
        "apiVersion": f"{DISCOVERY_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }


def document_bytes(doc: dict[str, Any]) -> bytes:
    """The canonical JSON of a document: the bytes the ETag is a hash of."""
    return json.dumps(doc, separators=(",", ":")).encode()
