"""The identity of a ``haproxy.cfg``, which HAProxy itself reports for the one it runs.

Why: ``diagnose`` must learn from HAProxy which configuration it actually
runs, not from the router's intentions. The writer puts
``description config-sha256:<digest>`` as the second line of the global
section; HAProxy's ``show info`` answers it as ``description``. The digest
is SHA-256 over the file without that line, so the assembly computes it
before inserting the line, anyone recomputes it from the file on disk, and
the file stays byte-stable as long as nothing else in it changes. It covers
``haproxy.cfg`` alone: the file a reload reads again (maps and servers
change at run time without one). Pure.
"""

from __future__ import annotations

import hashlib

from shiftnet.router.haproxy import writer

_EMPTY = writer.identity_line("")
_PREFIX = _EMPTY.rstrip("\n").encode()  # the line up to the digest
_VALUE_AT = len(_EMPTY) - 1 - len(writer.identity_value(""))  # where the value starts


def stamp(body: bytes) -> bytes:
    """``body`` (``haproxy.cfg`` without identity, first line ``global``) with its identity."""
    cut = body.index(b"\n") + 1
    line = writer.identity_line(hashlib.sha256(body).hexdigest()).encode()
    return body[:cut] + line + body[cut:]


def _split(data: bytes) -> tuple[str, bytes] | None:
    """(the identity line's value, the file without that line); None when it has none."""
    first, newline, rest = data.partition(b"\n")
    line, newline2, tail = rest.partition(b"\n")
    if not newline or not newline2 or not line.startswith(_PREFIX):
        return None
    return line[_VALUE_AT:].decode("ascii", "replace"), first + b"\n" + tail


def declared(data: bytes) -> str | None:
    """The identity the file's own line names (the writer's; no digest is computed)."""
    parts = _split(data)
    return parts[0] if parts is not None else None


def computed(data: bytes) -> str | None:
    """The identity of the file's content: the digest over it without its identity line.

    It equals :func:`declared` for a file as written; a file edited since differs.
    None: the file has no identity line (not written by this writer).
    """
    parts = _split(data)
    return writer.identity_value(hashlib.sha256(parts[1]).hexdigest()) if parts else None
