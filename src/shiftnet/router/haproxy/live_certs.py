"""Route certificates served through the runtime API: the commands that turn one file set's
certificates and crt-list into another's.

Why: a certificate that changes (a rotated Secret, a Route's new inline
certificate) or a route that starts or stops bringing its own certificate
would otherwise cost a reload. HAProxy 2.6 can replace a loaded certificate
(``set ssl cert`` + ``commit ssl cert``), load a new one (``new ssl cert``
first) and add or remove crt-list lines (``add``/``del ssl crt-list``), so
only those files are compared here; any other file that differs (CA files,
allowlists, error pages) still needs a reload. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from shiftnet.router.haproxy import commands
from shiftnet.router.haproxy.names import CERT_DIR, CRT_LIST


def _is_route_cert(name: str) -> bool:
    return name.startswith(CERT_DIR + "/")


def _crt_lines(data: bytes | None) -> dict[str, str]:
    """crt-list lines by certificate file (each route file has one line)."""
    out: dict[str, str] = {}
    for line in (data or b"").decode("ascii", errors="replace").splitlines():
        file = line.split(" ", 1)[0]
        if file:
            out[file] = line
    return out


def certificate_commands(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str] | None:
    """Commands serving ``new``'s certificates where ``old``'s are served; None when another
    file differs too (a reload is needed). Raises ``RuntimeAPIError`` for what the runtime
    API cannot carry."""
    if old is new:
        return []
    changed = [n for n in old.keys() | new.keys() if old.get(n) != new.get(n)]
    if not changed:
        return []
    if any(n != CRT_LIST and not _is_route_cert(n) for n in changed):
        return None
    was, now = _crt_lines(old.get(CRT_LIST)), _crt_lines(new.get(CRT_LIST))
    if set(was) != {n for n in old if _is_route_cert(n)}:
        return None  # a crt-list that does not list each certificate once: reload
    if set(now) != {n for n in new if _is_route_cert(n)}:
        return None
    dropped = sorted(f for f in was if was[f] != now.get(f))
    added = sorted(f for f in now if now[f] != was.get(f))
    loaded = sorted(f for f in now if f in new and old.get(f) not in (None, new[f]))
    cmds = [commands.del_ssl_crt_list(CRT_LIST, f) for f in dropped]
    cmds += [commands.del_ssl_cert(f) for f in dropped if f not in now]
    for f in sorted(f for f in now if f not in old):
        cmds += [commands.new_ssl_cert(f)]
    for f in sorted(set(loaded) | {f for f in now if f not in old}):
        cmds += [commands.set_ssl_cert(f, new[f]), commands.commit_ssl_cert(f)]
    cmds += [commands.add_ssl_crt_list(CRT_LIST, now[f]) for f in added]
    return cmds
