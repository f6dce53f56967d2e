"""``-o yaml|json|name`` renderings, in the shapes ``apply -f`` reads back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from shiftnet.api import Resource
from shiftnet.cli.naming import object_ref


def as_document(objects: Sequence[Resource], single: bool) -> dict[str, Any]:
    if single and len(objects) == 1:
        return objects[0].to_dict()
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [o.to_dict() for o in objects],
        "metadata": {"resourceVersion": ""},
    }


def render(objects: Sequence[Resource], fmt: str, single: bool) -> str:
    if fmt == "name":
        return "".join(f"{object_ref(type(o), o.name)}\n" for o in objects)
    doc = as_document(objects, single)
    if fmt == "json":
        return json.dumps(doc, indent=4) + "\n"
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)
