"""``meta.k8s.io/v1`` Tables: what ``kubectl get`` asks for to print a kind's columns.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints the server's columns (upper-cased, priority-1 ones only with ``-o
wide``). The columns are :mod:`shiftnet.api.columns`, the same ones
``shiftnet get`` prints. Pure: the caller passes ``now`` for the ages.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Literal

from shiftnet.api.base import Resource
from shiftnet.api.columns import cells, columns_for
from shiftnet.apiserver.wire import out_object, shown_metadata
from shiftnet.errors import InvalidInput

IncludeObject = Literal["None", "Metadata", "Object"]
INCLUDE_OBJECT_VALUES: tuple[str, ...] = ("None", "Metadata", "Object")

TABLE_API_VERSION = "meta.k8s.io/v1"


def include_object_policy(value: str | None) -> IncludeObject:
    """The ``includeObject`` query parameter; unset means ``Metadata``, as Kubernetes."""
    if not value:
        return "Metadata"
    if value == "None":
        return "None"
    if value == "Metadata":
        return "Metadata"
    if value == "Object":
        return "Object"
    supported = ", ".join(f'"{v}"' for v in INCLUDE_OBJECT_VALUES)
    raise InvalidInput(
        f'includeObject: Unsupported value: "{value}": supported values: {supported}'
    )


def partial_object_metadata(obj: Resource) -> dict[str, Any]:
    """The object's metadata alone, as PartialObjectMetadata, empty fields omitted."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": TABLE_API_VERSION,
        "metadata": {k: v for k, v in obj.metadata.to_dict().items() if v not in ("", {}, [])},
    }


def column_definitions(cls: type[Resource]) -> list[dict[str, Any]]:
    """Every column of the kind, wide ones with priority 1 (kubectl hides them by default)."""
    return [
        {
            "name": c.name,
            "type": c.type,
            "format": c.format,
            "description": c.description,
            "priority": c.priority,
        }
        for c in columns_for(cls)
    ]


def table_for(
    kind: type[Resource],
    objects: Sequence[Resource],
    *,
    include_object: IncludeObject = "Metadata",
    now: dt.datetime,
    resource_version: str = "",
    continue_token: str = "",
) -> dict[str, Any]:
    """The Table of ``objects`` (all of ``kind``), rows in the order given.

    ``include_object`` is the request's ``includeObject``: ``Metadata`` puts a
    PartialObjectMetadata in each row (kubectl reads namespace and labels from
    it for ``-A`` and ``--show-labels``), ``Object`` the whole object, ``None``
    nothing.
    """
    columns = columns_for(kind)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells(columns, obj, now)}
        if include_object == "Metadata":
            row["object"] = partial_object_metadata(obj)
        elif include_object == "Object":
            row["object"] = obj.to_dict()
        rows.append(row)
    metadata: dict[str, str] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": metadata,
        "columnDefinitions": column_definitions(kind),
        "rows": rows,
    }


def table_of_stored(
    kind: type[Resource],
    items: Sequence[dict[str, Any]],
    *,
    include_object: IncludeObject = "Metadata",
    now: dt.datetime,
    resource_version: str = "",
    continue_token: str = "",
) -> dict[str, Any]:
    """:func:`table_for` of objects as the store holds them (or as the API shows them).

    Each row's metadata comes from the stored metadata, and the whole object is
    shaped only when the row carries it: a Table of a long list costs the
    columns, not a shaped copy of every object.
    """
    metas = [shown_metadata(raw.get("metadata") or {}) for raw in items]
    objects = [
        kind.model_validate({**raw, "metadata": m}) for raw, m in zip(items, metas, strict=True)
    ]
    table = table_for(
        kind,
        objects,
        include_object="None",
        now=now,
        resource_version=resource_version,
        continue_token=continue_token,
    )
    if include_object == "Metadata":
        for row, meta in zip(table["rows"], metas, strict=True):
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": TABLE_API_VERSION,
                "metadata": meta,
            }
    elif include_object == "Object":
        for row, raw in zip(table["rows"], items, strict=True):
            row["object"] = out_object(raw)
    return table
