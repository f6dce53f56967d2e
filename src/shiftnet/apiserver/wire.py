"""Objects and lists as the API returns them (pure).

The store keeps ``creationTimestamp`` with microseconds (so "oldest wins"
orders objects made in one second); the API shows it as Kubernetes does,
RFC 3339 to the second. Empty fields are left out, as Kubernetes' Go types
leave them out, so ``kubectl get -o yaml`` prints what it prints elsewhere.
"""

from __future__ import annotations

from typing import Any

from shiftnet.apiserver.resources import ResourceInfo


def rfc3339_seconds(stamp: str) -> str:
    """``2024-05-01T10:00:00.123456Z`` → ``2024-05-01T10:00:00Z``."""
    if "." in stamp and stamp.endswith("Z"):
        return stamp.split(".", 1)[0] + "Z"
    return stamp


# Maps whose keys and values are the user's own: an empty value there is data.
# managedFields' fieldsV1 is a tree whose leaves are empty objects.
_USER_MAPS = frozenset({"labels", "annotations", "selector", "nodeSelector", "data", "fieldsV1"})


def omit_empty(value: Any) -> Any:
    """Drop empty strings, lists and objects, as Go's ``omitempty`` leaves them out."""
    if isinstance(value, dict):
        return _omit_in_dict(value)
    if isinstance(value, list):
        return [omit_empty(v) for v in value]
    return value


def _omit_in_dict(value: dict[str, Any]) -> dict[str, Any]:
    # Every list or shaping of an object passes here: plain type tests first, the
    # general case last.
    out: dict[str, Any] = {}
    for key, item in value.items():
        kind = type(item)
        if kind is str:
            if item:
                out[key] = item
        elif kind is dict:
            if key in _USER_MAPS:
                if item:
                    out[key] = dict(item)
                continue
            kept = _omit_in_dict(item)
            if kept:
                out[key] = kept
        elif kind is list:
            if item:
                out[key] = [omit_empty(v) for v in item]
        elif kind is int or kind is bool or kind is float or item is None:
            out[key] = item
        else:
            if key in _USER_MAPS and isinstance(item, dict):
                if item:
                    out[key] = dict(item)
                continue
            kept = omit_empty(item)
            if kept not in ("", [], {}):
                out[key] = kept
    return out


def shown_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """An object's metadata as the API shows it (see :func:`out_object`)."""
    out = _omit_in_dict(meta)
    stamp = out.get("creationTimestamp")
    if isinstance(stamp, str):
        out["creationTimestamp"] = rfc3339_seconds(stamp)
    return out


def out_object(obj: dict[str, Any]) -> dict[str, Any]:
    """An object as the API shows it: empty fields left out, timestamps to the second."""
    out: dict[str, Any] = omit_empty(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        stamp = meta.get("creationTimestamp")
        if isinstance(stamp, str):
            meta["creationTimestamp"] = rfc3339_seconds(stamp)
    return out


def out_list(
    info: ResourceInfo,
    items: list[dict[str, Any]],
    revision: int,
    continue_token: str = "",
    remaining: int | None = None,
    shape: bool = True,
) -> dict[str, Any]:
    """A kind's list; ``shape=False`` leaves the items as stored (for a Table)."""
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if continue_token:
        meta["continue"] = continue_token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
    return {
        "kind": f"{info.kind}List",
        "apiVersion": info.group_version,
        "metadata": meta,
        "items": [out_object(o) for o in items] if shape else items,
    }
