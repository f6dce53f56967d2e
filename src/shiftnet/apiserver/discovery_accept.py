"""Which discovery form a request asks for, and whether its cached copy is current; pure.

kubectl sends one ``Accept`` naming aggregated v2, then v2beta1, then plain
JSON; a client that names neither aggregated form (the Python client, curl)
gets the unaggregated documents. ``If-None-Match`` lets a
client with a cached aggregated document skip the body when nothing changed.
"""

from __future__ import annotations

import hashlib

from shiftnet.apiserver.aggregated_discovery import (
    AGGREGATED_VERSIONS,
    DISCOVERY_GROUP,
    DISCOVERY_KIND,
    AggregatedVersion,
)

_LEGACY_TYPES = frozenset({"application/json", "application/*", "*/*"})


def _quality(value: str) -> float:
    try:
        q = float(value)
    except ValueError:
        return 0.0  # an unreadable weight accepts nothing
    return q if 0.0 <= q <= 1.0 else 0.0


def _choice(media_range: str) -> tuple[AggregatedVersion | None, float] | None:
    """What one media range of an ``Accept`` would take, with its weight; None when
    it takes nothing the server writes for discovery (protobuf, YAML, another
    version or kind)."""
    kind, *raw = (p.strip() for p in media_range.split(";"))
    params: dict[str, str] = {}
    for p in raw:
        key, _, value = p.partition("=")
        params[key.strip().lower()] = value.strip().strip('"')
    q = _quality(params.pop("q", "1"))
    kind = kind.lower()
    if not kind or q <= 0.0:
        return None
    if not params.keys() & {"g", "v", "as"}:
        return (None, q) if kind in _LEGACY_TYPES else None
    if kind != "application/json":
        return None
    if params.get("g") != DISCOVERY_GROUP or params.get("as") != DISCOVERY_KIND:
        return None
    version = params.get("v")
    for known in AGGREGATED_VERSIONS:
        if version == known:
            return (known, q)
    return None


def negotiate(accept: str) -> AggregatedVersion | None:
    """The aggregated version to answer with, or None for the unaggregated form.

    The acceptable range with the highest ``q`` wins, the first of equal ones; a
    header that accepts nothing the server writes gets the unaggregated form, which
    every client can read."""
    best: tuple[AggregatedVersion | None, float] | None = None
    for media_range in accept.split(","):
        choice = _choice(media_range)
        if choice is not None and (best is None or choice[1] > best[1]):
            best = choice
    return best[0] if best is not None else None


def etag_of(body: bytes) -> str:
    """A strong ETag: the quoted hash of the exact bytes served."""
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def etag_matches(if_none_match: str, etag: str) -> bool:
    """``If-None-Match`` by weak comparison (RFC 9110 13.1.2): ``*``, or any listed tag."""
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag and tag == etag:
            return True
    return False
