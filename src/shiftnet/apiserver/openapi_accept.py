"""Which encoding of ``/openapi/v2`` a request's ``Accept`` asks for; pure.

As kube-openapi's handler: the ranges sorted by weight (the more specific
first among equal weights), the first that names JSON or gnostic's protobuf
wins, and nothing acceptable is a 406. kubectl before 1.27 names only the
protobuf form; the Python client and curl get JSON.
"""

from __future__ import annotations

from shiftnet.apiserver.openapi_protobuf import MEDIA_TYPE, MEDIA_TYPE_DOTTED

JSON = "application/json"
PROTOBUF = MEDIA_TYPE_DOTTED  # the Content-Type kube-openapi answers protobuf with
_SERVED = ((JSON, JSON), (MEDIA_TYPE, PROTOBUF), (MEDIA_TYPE_DOTTED, PROTOBUF))


def _weight(params: list[str]) -> float:
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return 0.0
            return q if 0.0 <= q <= 1.0 else 0.0
    return 1.0


def negotiate_v2(accept: str) -> str | None:
    """The Content-Type to answer ``/openapi/v2`` with, or None when nothing offered is
    acceptable (406). No header accepts anything."""
    ranges: list[tuple[float, int, int, str]] = []
    for position, clause in enumerate((accept or "*/*").split(",")):
        media, *params = (p.strip() for p in clause.split(";"))
        q = _weight(params)
        if not media or q <= 0.0:
            continue
        wildcards = media.count("*")
        ranges.append((-q, wildcards, position, media.lower()))
    for _, _, _, media in sorted(ranges):
        kind, _, sub = media.partition("/")
        for offered, answer in _SERVED:
            want_kind, _, want_sub = offered.partition("/")
            if kind in (want_kind, "*") and sub in (want_sub, "*"):
                return answer
    return None
