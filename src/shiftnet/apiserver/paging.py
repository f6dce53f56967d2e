"""``limit``/``continue`` for lists (pure).

The token carries the first list's revision and the last key returned.
Later pages are read from the store's current state, after that key (the
store has no reads at an older revision), and keep reporting the first
page's resourceVersion so a watch from it sees every later change.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from shiftnet.api.names import parse_integer
from shiftnet.apiserver.status import StatusError, bad_request


@dataclass(frozen=True)
class Position:
    revision: int
    namespace: str
    name: str


def encode_token(pos: Position) -> str:
    raw = json.dumps({"v": 1, "rv": pos.revision, "ns": pos.namespace, "name": pos.name})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str) -> Position:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return Position(int(data["rv"]), str(data["ns"]), str(data["name"]))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise bad_request(f'invalid continue token "{token[:64]}"') from None


def parse_limit(text: str | None) -> int:
    if not text:
        return 0
    value = parse_integer(text)
    if value is None:
        raise bad_request(f'invalid limit "{text[:32]}": must be an integer')
    return max(value, 0)


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def page(
    items: list[dict[str, Any]], revision: int, limit: int, after: Position | None
) -> tuple[list[dict[str, Any]], str, int]:
    """(this page, the next token or "", how many remain) of ``items`` sorted by key."""
    if after is not None:
        mark = (after.namespace, after.name)
        items = [o for o in items if _key(o) > mark]
    if not limit or len(items) <= limit:
        return items, "", 0
    chosen = items[:limit]
    ns, name = _key(chosen[-1])
    return chosen, encode_token(Position(revision, ns, name)), len(items) - limit


def expired_token() -> StatusError:
    return StatusError(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter.",
    )
