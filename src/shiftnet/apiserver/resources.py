"""What the API serves: every kind of :mod:`shiftnet.api.registry` under its group and version.

Pure: discovery documents and request routing are both read from this table,
so a kind added to the registry is served, discovered and routed with no
other change.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftnet.api.base import Resource
from shiftnet.api.registry import KINDS

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
# Upstream's "all" category (kubectl get all): workloads, services and, in OpenShift, routes.
ALL_CATEGORY = frozenset({"pods", "services", "routes"})
# Subresources and their verbs, as upstream serves them for these kinds.
SUBRESOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    "namespaces": {"status": ("get", "patch", "update")},
    "pods": {"status": ("get", "patch", "update"), "log": ("get",)},
    "services": {"status": ("get", "patch", "update")},
    "nodes": {"status": ("get", "patch", "update")},
    "routes": {"status": ("get", "patch", "update")},
    "ingresses": {"status": ("get", "patch", "update")},
}
# Kinds whose DELETE answers with the deleted object, as upstream's registries do
# (typed clients decode it as that kind); the others answer with a Status.
RETURNS_DELETED = frozenset({"namespaces", "pods", "services"})


@dataclass(frozen=True)
class ResourceInfo:
    """One served resource: its URL names and the model behind it."""

    model: type[Resource]
    group: str  # "" for the core group
    version: str

    @property
    def plural(self) -> str:
        return self.model.RESOURCE

    @property
    def kind(self) -> str:
        return self.model.KIND

    @property
    def singular(self) -> str:
        return self.model.KIND.lower()

    @property
    def namespaced(self) -> bool:
        return self.model.NAMESPACED

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """The resource as messages name it: ``pods``, ``routes.route.openshift.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """``Pod``, ``Route.route.openshift.io``: the subject of an "is invalid" message."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def verbs(self) -> tuple[str, ...]:
        return VERBS

    @property
    def returns_deleted(self) -> bool:
        return self.plural in RETURNS_DELETED

    @property
    def categories(self) -> tuple[str, ...]:
        return ("all",) if self.plural in ALL_CATEGORY else ()

    @property
    def subresources(self) -> dict[str, tuple[str, ...]]:
        return SUBRESOURCES.get(self.plural, {})


def _info(model: type[Resource]) -> ResourceInfo:
    group, _, version = model.API_VERSION.rpartition("/")
    return ResourceInfo(model=model, group=group, version=version)


RESOURCES: tuple[ResourceInfo, ...] = tuple(_info(k) for k in KINDS)
_BY_PATH: dict[tuple[str, str, str], ResourceInfo] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}


def group_versions() -> dict[str, list[str]]:
    """Served versions by group ("" is the core group), in registry order."""
    out: dict[str, list[str]] = {}
    for r in RESOURCES:
        versions = out.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return out


def resources_in(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in RESOURCES if r.group == group and r.version == version]


def find(group: str, version: str, plural: str) -> ResourceInfo | None:
    return _BY_PATH.get((group, version, plural))
