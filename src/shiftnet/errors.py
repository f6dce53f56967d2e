"""Typed errors a user can cause or meet; each renders as one clear sentence.

The CLI prints ``str(err)`` and exits non-zero; a traceback is shown only with
``--debug``. Never raise bare ``Exception`` from shiftnet code.
"""

from __future__ import annotations

# How much of a user's value an error message repeats: enough to recognise it
# (the longest valid name or host, 253 characters, fits whole), never so much
# that a 100 kB value floods the terminal.
VALUE_LIMIT = 256
NAME_LIMIT = 253


def shorten(text: str, limit: int = VALUE_LIMIT) -> str:
    """``text`` made safe to repeat in an error message: cut to ``limit`` characters
    (saying how much is left out) and on one line (control and other unprintable
    characters escaped, ``\\n`` for a newline), so a value can neither flood a
    terminal nor forge a log line.

    The one helper every message that repeats user input goes through.
    """
    head = text[:limit]
    if not head.isprintable():
        head = "".join(ch if ch.isprintable() else _escape(ch) for ch in head)
    if len(text) <= limit:
        return head
    return f"{head}...({len(text) - limit} more characters)"


def _escape(ch: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


class ShiftnetError(Exception):
    """Base of every error shiftnet raises on purpose."""

    exit_code = 1


class InvalidObject(ShiftnetError):
    """An object failed validation; names the kind, the object and the field path."""

    def __init__(self, kind: str, name: str, field: str, message: str) -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.message = message
        kind, name, field = shorten(kind), shorten(name, NAME_LIMIT), shorten(field, NAME_LIMIT)
        where = f'{kind} "{name}"' if name else kind
        super().__init__(
            f"{where} is invalid: {field}: {message}" if field else f"{where} is invalid: {message}"
        )


class InvalidInput(ShiftnetError):
    """Input that is not even an object: malformed YAML, unknown kind, unreadable file."""


class NotFound(ShiftnetError):
    def __init__(self, resource: str, namespace: str | None, name: str) -> None:
        self.resource, self.namespace, self.name = resource, namespace, name
        where = f' in namespace "{namespace}"' if namespace else ""
        super().__init__(f'{resource} "{name}" not found{where}')


class AlreadyExists(ShiftnetError):
    def __init__(self, resource: str, namespace: str | None, name: str) -> None:
        self.resource, self.namespace, self.name = resource, namespace, name
        where = f' in namespace "{namespace}"' if namespace else ""
        super().__init__(f'{resource} "{name}" already exists{where}')


class Conflict(ShiftnetError):
    """Optimistic concurrency failed: the object changed since it was read."""

    def __init__(self, resource: str, namespace: str | None, name: str, detail: str = "") -> None:
        self.resource, self.namespace, self.name = resource, namespace, name
        msg = (
            f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )
        super().__init__(msg + (f" ({detail})" if detail else ""))


class Expired(ShiftnetError):
    """A watch asked for a revision the store has compacted away: relist."""

    def __init__(self, revision: int, oldest: int) -> None:
        self.revision, self.oldest = revision, oldest
        super().__init__(f"too old resource version: {revision} (oldest kept is {oldest})")


class StoreUnavailable(ShiftnetError):
    """The cluster store cannot be reached."""


class AllocationError(ShiftnetError):
    """An address or subnet cannot be given (taken, out of range, or range full)."""


class InvalidAllocation(AllocationError):
    """An object asks for an address it cannot have; says which field, which value
    (``None`` when it asked for none and the range is full) and why."""

    def __init__(self, message: str, field: str, value: str | int | None, reason: str) -> None:
        super().__init__(message)
        self.field, self.value, self.reason = field, value, reason


class ConfigError(ShiftnetError):
    """A component's configuration (flag or environment variable) is invalid."""


class InvalidPatch(ShiftnetError):
    """A patch body that is not a valid patch of its type (the API answers 400 Bad Request)."""


class PatchNotApplicable(ShiftnetError):
    """A valid patch that cannot apply to this object: a failed test, a missing path (422)."""


class FieldManagerConflict(ShiftnetError):
    """A server-side apply would change fields other managers own (the API answers 409).

    ``conflicts`` are (manager as printed, field path as printed) pairs, sorted.
    """

    def __init__(self, message: str, conflicts: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.message = message
        self.conflicts = conflicts
