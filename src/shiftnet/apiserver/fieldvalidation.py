"""Server-side field validation (``fieldValidation=Strict|Warn|Ignore``), as upstream has it.

Pure. A body may name fields the kind does not have, or give one field
twice. ``Strict`` refuses the write (400, ``strict decoding error: unknown
field "spec.foo"``, every such field listed); ``Warn`` drops unknown fields,
keeps the last of duplicates and answers with one ``Warning`` header per
field (kubectl prints ``Warning: unknown field "spec.foo"``); ``Ignore`` does
the same silently. Without the parameter the server warns, as Kubernetes
does since 1.23; kubectl sends ``Strict`` unless told ``--validate=warn`` or
``--validate=false``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.status import StatusError, bad_request
from shiftnet.errors import NAME_LIMIT, shorten

Directive = Literal["Strict", "Warn", "Ignore"]
DIRECTIVES: tuple[Directive, ...] = ("Ignore", "Strict", "Warn")
DEFAULT: Directive = "Warn"
# Unknown fields nested in unknown fields go with their parent: a few rounds find all.
_ROUNDS = 8


def parse_directive(values: list[str]) -> Directive:
    """The ``fieldValidation`` query parameter; absent or empty means :data:`DEFAULT`."""
    chosen: Directive = DEFAULT
    for value in values:
        if value == "":
            continue
        if value not in DIRECTIVES:
            supported = ", ".join(f'"{d}"' for d in DIRECTIVES)
            raise bad_request(
                f'fieldValidation: Unsupported value: "{shorten(value, 32)}": '
                f"supported values: {supported}"
            )
        chosen = value  # one of DIRECTIVES, checked above
    return chosen


def warning_header(text: str) -> str:
    """One ``Warning`` header value (RFC 7234: code 299, agent ``-``, quoted text).
    ASCII-only quoting, so no user byte can end the header or start another."""
    return f"299 - {json.dumps(text, ensure_ascii=True)}"


def _path_text(keys: list[str | int]) -> str:
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else ("." if out else "") + key
    return shorten(out, NAME_LIMIT)


def _raw_keys(doc: Any, loc: tuple[int | str, ...]) -> list[str | int] | None:
    """pydantic's error location as keys into ``doc``; its own entries (the member of a
    union it tried) are not in the document and are skipped."""
    keys: list[str | int] = []
    cur = doc
    for part in loc:
        if isinstance(cur, dict):
            found = isinstance(part, str) and part in cur
        else:
            found = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if found:
            keys.append(part)
            cur = cur[part]
    return keys or None


def drop_unknown(model: type[BaseModel], raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``raw`` without the fields ``model`` does not have, and their paths
    (``spec.tls.colour``, ``spec.ports[1].nmae``) in the order found."""
    out = copy.deepcopy(raw)
    found: list[str] = []
    for _ in range(_ROUNDS):
        try:
            model.model_validate(out)
            return out, found
        except ValidationError as exc:
            extras = [tuple(e["loc"]) for e in exc.errors() if e["type"] == "extra_forbidden"]
        removed = False
        for loc in extras:
            keys = _raw_keys(out, loc)
            if keys is None or not isinstance(keys[-1], str):
                continue
            parent: Any = out
            for key in keys[:-1]:
                parent = parent[key]
            if isinstance(parent, dict) and keys[-1] in parent:
                del parent[keys[-1]]
                found.append(_path_text(keys))
                removed = True
        if not removed:
            break
    return out, found


@dataclass
class FieldCheck:
    """One request's directive, the duplicate fields its body had, and the warnings
    it has earned so far (a patch retried against a newer object warns once)."""

    directive: Directive = DEFAULT
    duplicates: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)

    def report(self, info: ResourceInfo, unknown: list[str]) -> None:
        """Refuse (Strict) or remember (Warn) the body's duplicate and unknown fields."""
        problems = [f'duplicate field "{shorten(d, NAME_LIMIT)}"' for d in self.duplicates]
        problems += [f'unknown field "{u}"' for u in unknown]
        if not problems or self.directive == "Ignore":
            return
        if self.directive == "Strict":
            version = info.group_version.rsplit("/", 1)[-1]
            raise StatusError(
                400,
                "BadRequest",
                f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: '
                f"strict decoding error: {', '.join(problems)}",
            )
        for text in problems:
            if text not in self.warnings:
                self.warnings.append(text)
