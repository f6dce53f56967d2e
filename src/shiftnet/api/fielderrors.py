"""One validation finding: a field path, a kind of problem, the bad value, a reason.

Rendered the way Kubernetes users already read them, e.g.
``spec.host: Invalid value: "Foo.com": a lowercase RFC 1123 subdomain ...``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from shiftnet.errors import VALUE_LIMIT


class ErrorType(StrEnum):
    REQUIRED = "Required value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    DUPLICATE = "Duplicate value"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"


# Types whose body never shows the value (it is missing, or beside the point).
_NO_VALUE = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG}

Value = str | int | float | bool | None


def quote(value: Value) -> str:
    """Render a value the way Go's %q / %v would in a Kubernetes message; a long
    string is cut (:data:`shiftnet.errors.VALUE_LIMIT`) so no message echoes it whole."""
    if isinstance(value, str):
        rest = len(value) - VALUE_LIMIT
        out = ['"']
        for ch in value[:VALUE_LIMIT]:
            if ch in ('"', "\\"):
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append("\\t")
            elif ch == "\r":
                out.append("\\r")
            elif not ch.isprintable():
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        out.append('"')
        if rest > 0:
            out.append(f"...({rest} more characters)")
        return "".join(out)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class FieldError:
    """One problem at one field path (``spec.tls.key``, ``spec.ports[1].name``)."""

    field: str
    type: ErrorType
    value: Value = None
    detail: str = ""

    @property
    def message(self) -> str:
        """Everything after ``field: `` (what :class:`InvalidObject` carries)."""
        body = self.type.value
        if self.type not in _NO_VALUE:
            body += f": {quote(self.value)}"
        if self.detail:
            body += f": {self.detail}"
        return body

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(field, ErrorType.REQUIRED, None, detail)


def invalid(field: str, value: Value, detail: str) -> FieldError:
    return FieldError(field, ErrorType.INVALID, value, detail)


def not_supported(field: str, value: Value, supported: Iterable[str]) -> FieldError:
    values = ", ".join(quote(v) for v in supported)
    return FieldError(field, ErrorType.NOT_SUPPORTED, value, f"supported values: {values}")


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, ErrorType.FORBIDDEN, None, detail)


def duplicate(field: str, value: Value) -> FieldError:
    return FieldError(field, ErrorType.DUPLICATE, value)


def too_long(field: str, limit: int) -> FieldError:
    return FieldError(field, ErrorType.TOO_LONG, None, f"must have at most {limit} bytes")


def too_many(field: str, actual: int, limit: int) -> FieldError:
    return FieldError(field, ErrorType.TOO_MANY, actual, f"must have at most {limit} items")


def join(*parts: str | int) -> str:
    """Build a field path: ``join("spec", "ports", 1, "name") == "spec.ports[1].name"``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = part
    return out
