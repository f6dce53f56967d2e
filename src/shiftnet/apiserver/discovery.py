"""Discovery documents (``/version``, ``/api``, ``/apis``, one group version), pure.

The unaggregated (v1) shapes, which clients that do not ask for aggregated
discovery read (the Python client); :mod:`aggregated_discovery` builds the
aggregated form from the same resource table.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

from shiftnet.apiserver.resources import ResourceInfo, group_versions, resources_in

# The Kubernetes release whose API shapes shiftnet serves: kubectl within one
# minor version of it prints no skew warning.
KUBE_MAJOR = "1"
KUBE_MINOR = "32"


def version_info() -> dict[str, str]:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0-shiftnet",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "cpython",
        "platform": f"linux/{arch}",
    }


def core_versions(server_address: str) -> dict[str, Any]:
    """``GET /api``."""
    return {
        "kind": "APIVersions",
        "versions": group_versions().get("", []),
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def group_list() -> dict[str, Any]:
    """``GET /apis``: every named group (the core group is under ``/api``)."""
    groups = []
    for group, versions in group_versions().items():
        if not group:
            continue
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>``, or None when the group is not served."""
    versions = group_versions().get(group) if group else None
    if not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def _entry(r: ResourceInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": list(r.verbs),
    }
    if r.model.SHORT_NAMES:
        out["shortNames"] = list(r.model.SHORT_NAMES)
    if r.categories:
        out["categories"] = list(r.categories)
    return out


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>``, or None when not served."""
    served = resources_in(group, version)
    if not served:
        return None
    entries: list[dict[str, Any]] = []
    for r in sorted(served, key=lambda r: r.plural):
        entries.append(_entry(r))
        for sub, verbs in sorted(r.subresources.items()):
            entries.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": list(verbs),
                }
            )
    out: dict[str, Any] = {
        "kind": "APIResourceList",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }
    if group:
        out["apiVersion"] = "v1"
    return out
