"""The PATCH body types, each turned into one function ``object -> patched object``.

The patch arithmetic is :mod:`shiftnet.apiserver.patch`; here the media type
picks it and its errors become ``Status`` answers: a patch that is not a
patch is 400, one that cannot apply to this object is 422.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shiftnet.apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import StatusError, bad_request
from shiftnet.errors import InvalidPatch, PatchNotApplicable

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

Patch = Callable[[dict[str, Any]], dict[str, Any]]


def _checked(fn: Callable[[dict[str, Any]], Any]) -> Patch:
    def run(obj: dict[str, Any]) -> dict[str, Any]:
        try:
            out = fn(obj)
        except InvalidPatch as err:
            raise bad_request(str(err)) from None
        except PatchNotApplicable as err:
            raise StatusError(422, "Invalid", str(err)) from None
        if not isinstance(out, dict):
            raise StatusError(422, "Invalid", "the patched document is not an object")
        return out

    return run


def patch_function(content_type: str, patch: Any, info: ResourceInfo) -> Patch:
    if content_type == MERGE:
        return _checked(lambda obj: apply_merge_patch(obj, patch))
    if content_type == STRATEGIC:
        return _checked(lambda obj: apply_strategic_merge_patch(obj, patch, info.model))
    if content_type == JSON_PATCH:
        return _checked(lambda obj: apply_json_patch(obj, patch))
    raise StatusError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format "{content_type}"',
    )
