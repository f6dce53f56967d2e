"""The PATCH body types, each turned into one function ``object -> patched object``.

JSON merge patch (RFC 7386) is applied here; a strategic merge patch that
uses no directive (``$patch``, ``$setElementOrder``, ...) and no lists is the
same as a merge patch and is applied as one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import StatusError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

Patch = Callable[[dict[str, Any]], dict[str, Any]]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _plain(patch: Any) -> bool:
    if isinstance(patch, dict):
        return all(not str(k).startswith("$") and _plain(v) for k, v in patch.items())
    return not isinstance(patch, list)


def patch_function(content_type: str, patch: Any, info: ResourceInfo) -> Patch:
    if content_type == MERGE or (content_type == STRATEGIC and _plain(patch)):
        if not isinstance(patch, dict):
            raise bad_request("a merge patch must be a JSON object")
        return lambda obj: merge_patch(obj, patch)
    if content_type in (STRATEGIC, JSON_PATCH):
        raise StatusError(
            415,
            "UnsupportedMediaType",
            f"{content_type} with lists or directives is not served yet for {info.qualified}: "
            "use a merge patch",
        )
    raise StatusError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format "{content_type}"',
    )
