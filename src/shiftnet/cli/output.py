"""``-o yaml|json|name`` renderings, in the shapes ``apply -f`` reads back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from shiftnet.api import Resource
from shiftnet.cli.naming import object_ref


def _as_dict(obj: Resource, managed_fields: bool) -> dict[str, Any]:
    out = obj.to_dict()
    if not managed_fields:  # bookkeeping of server-side apply: kubectl hides it unless asked
        out.get("metadata", {}).pop("managedFields", None)
    return out


def as_document(
    objects: Sequence[Resource], single: bool, managed_fields: bool = False
) -> dict[str, Any]:
    if single and len(objects) == 1:
        return _as_dict(objects[0], managed_fields)
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_as_dict(o, managed_fields) for o in objects],
        "metadata": {"resourceVersion": ""},
    }


def render(
    objects: Sequence[Resource], fmt: str, single: bool, managed_fields: bool = False
) -> str:
    """``managed_fields``: keep ``metadata.managedFields`` (kubectl's ``--show-managed-fields``)."""
    if fmt == "name":
        return "".join(f"{object_ref(type(o), o.name)}\n" for o in objects)
    doc = as_document(objects, single, managed_fields)
    if fmt == "json":
        return json.dumps(doc, indent=4) + "\n"
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)
