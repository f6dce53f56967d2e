"""How a strategic merge patch merges the lists of each core kind, as Kubernetes defines it.

Kubernetes tags some list fields of its built-in types with a patch strategy:
``merge`` with a merge key (containers by ``name``, Service ports by
``port``, conditions by ``type``), or ``merge`` of primitives as a set
(finalizers). Every other list is replaced whole by a patch. The same table
feeds the strategic merge patch (:mod:`shiftnet.apiserver.patch`) and the
``x-kubernetes-patch-*`` extensions of the OpenAPI documents, which is how
kubectl learns the keys. Kinds that are custom resources on a real cluster
(Route, HostSubnet, ClusterNetwork) have no entry: they take merge patches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shiftnet.api.base import Resource
from shiftnet.api.core import Endpoints, Namespace, Node, Pod, Service


@dataclass(frozen=True)
class Struct:
    """Merge rules inside one object: its merged lists and the objects below it."""

    fields: Mapping[str, Struct] = field(default_factory=dict)
    lists: Mapping[str, MergeList] = field(default_factory=dict)


@dataclass(frozen=True)
class MergeList:
    """A list merged item by item: objects by ``key``, primitives as a set when ``key`` is None."""

    key: str | None
    item: Struct = field(default_factory=Struct)
    retain_keys: bool = False

    @property
    def strategy(self) -> str:
        """The ``x-kubernetes-patch-strategy`` value."""
        return "merge,retainKeys" if self.retain_keys else "merge"


EMPTY = Struct()

METADATA = Struct(lists={"finalizers": MergeList(None), "ownerReferences": MergeList("uid")})
CONDITIONS = MergeList("type")

CONTAINER = Struct(
    lists={
        "ports": MergeList("containerPort"),
        "env": MergeList("name"),
        "volumeMounts": MergeList("mountPath"),
        "volumeDevices": MergeList("devicePath"),
    }
)
POD = Struct(
    fields={
        "metadata": METADATA,
        "spec": Struct(
            lists={
                "containers": MergeList("name", CONTAINER),
                "initContainers": MergeList("name", CONTAINER),
                "ephemeralContainers": MergeList("name", CONTAINER),
                "volumes": MergeList("name", retain_keys=True),
                "imagePullSecrets": MergeList("name"),
                "hostAliases": MergeList("ip"),
            }
        ),
        "status": Struct(lists={"conditions": CONDITIONS, "podIPs": MergeList("ip")}),
    }
)
SERVICE = Struct(
    fields={
        "metadata": METADATA,
        "spec": Struct(lists={"ports": MergeList("port")}),
        "status": Struct(lists={"conditions": CONDITIONS}),
    }
)
# Endpoints.subsets carries no strategy upstream: a patch replaces the subsets whole.
ENDPOINTS = Struct(fields={"metadata": METADATA})
NODE = Struct(
    fields={
        "metadata": METADATA,
        "status": Struct(lists={"conditions": CONDITIONS, "addresses": MergeList("type")}),
    }
)
NAMESPACE = Struct(
    fields={"metadata": METADATA, "status": Struct(lists={"conditions": CONDITIONS})}
)

STRATEGIC: dict[type[Resource], Struct] = {
    Namespace: NAMESPACE,
    Pod: POD,
    Service: SERVICE,
    Endpoints: ENDPOINTS,
    Node: NODE,
}


def strategy_for(kind: type[Resource]) -> Struct | None:
    """The kind's merge rules, or None when it takes no strategic merge patch (custom kinds)."""
    return STRATEGIC.get(kind)
