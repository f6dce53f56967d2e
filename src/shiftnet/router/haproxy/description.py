"""What HAProxy should serve, as immutable values: backends with their options and slots,
map entries, crt-list entries and files.

Why: the writer (``writer.py``) turns this into HAProxy syntax, and the runtime
planner (``live.py``) compares two of these to find the commands that move a
running HAProxy from one to the other. Neither ever reads rendered text back.
``build.py`` makes these from the L7 model; ``assembly.py`` keeps them up to
date route by route.

Values a user controls are checked on the way in (``build.py``, through
``escape.py``). Free-form ones that HAProxy reads as a word are held
already escaped, in the fields whose names end in ``_word``; the writer puts
them in place as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from shiftnet.router.annotations import RateLimit
from shiftnet.router.haproxy.names import SPARE_HOST, SPARE_PORT

_Rank = tuple[int, int, str]  # (-len(normalized path), -len(path), "ns/name"): smaller wins


class Member(NamedTuple):
    """One pod in a slot: what ``set server`` can change (address, port, weight)."""

    ip: str
    port: int
    weight: int  # 0-256, as HAProxy takes it
    address: str  # ``ip:port`` as a server line holds it (IPv6 in brackets), checked


@dataclass(frozen=True)
class Cookie:
    """The sticky cookie of an HTTP backend; each slot's cookie value derives from the
    backend name, and so does the cookie name unless the route sets one."""

    name_word: str | None  # the route's cookie name, quoted; None: derived from the backend
    secure: bool


class HeaderRule(NamedTuple):
    """One header action as a backend or frontend writes it: the name and, for ``Set``,
    the value, each an escaped word (:func:`escape.header_name`, :func:`escape.header_value`)."""

    name_word: str
    value_word: str | None  # None: del-header


@dataclass(frozen=True)
class BackendOptions:
    """Everything a backend section says apart from its name and its server slots.

    Its hash is computed once: the writer's template cache looks it up for
    every backend it writes.
    """

    parent: str  # the defaults section it is ``from``
    http: bool  # mode http (False: mode tcp)
    balance: str
    timeout_server_ms: int | None = None
    timeout_tunnel_ms: int | None = None
    allowlist_word: str | None = None  # the quoted name of the route's allowlist file
    rate_limit: RateLimit | None = None
    rewrite_words: tuple[str, str] | None = None  # replace-path (pattern, replacement)
    hsts_word: str | None = None
    cookie: Cookie | None = None
    request_headers: tuple[HeaderRule, ...] = ()  # the route's spec.httpHeaders, in order
    response_headers: tuple[HeaderRule, ...] = ()

    def __hash__(self) -> int:
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(
                (
                    self.parent,
                    self.http,
                    self.balance,
                    self.timeout_server_ms,
                    self.timeout_tunnel_ms,
                    self.allowlist_word,
                    self.rate_limit,
                    self.rewrite_words,
                    self.hsts_word,
                    self.cookie,
                    self.request_headers,
                    self.response_headers,
                )
            )
            object.__setattr__(self, "_hash", cached)
        return cached


class ServerOptions(NamedTuple):
    """What every ``server`` line of a backend says besides its slot's member."""

    check_inter_ms: int | None = None  # health checks (only with more than one pod)
    maxconn: int | None = None
    ssl: bool = False  # reencrypt: TLS to the pod
    ca_file_word: str | None = None  # with ssl: verify against this file (None: verify none)

    def without_checks(self) -> ServerOptions:
        """These options as the runtime API can reach them: it cannot add or drop checks."""
        if self.check_inter_ms is None:
            return self
        return ServerOptions(None, self.maxconn, self.ssl, self.ca_file_word)


class SlotState(NamedTuple):
    """One slot as ``set server`` sees it (an empty slot points nowhere, disabled)."""

    address: str
    port: int
    weight: int
    disabled: bool


EMPTY_SLOT = SlotState(SPARE_HOST, SPARE_PORT, 0, True)


class Backend(NamedTuple):
    """One backend section: a route's (or routes' shared) backend, or a spare.

    A named tuple, not a frozen dataclass: 10,000 of them are made per cold
    render, and a frozen dataclass sets each field through ``object.__setattr__``.
    """

    name: str
    options: BackendOptions
    servers: ServerOptions
    slots: tuple[Member | None, ...]  # None: an empty slot

    def slot_states(self) -> list[SlotState]:
        return [
            EMPTY_SLOT if m is None else SlotState(m.ip, m.port, m.weight, False)
            for m in self.slots
        ]

    def with_slots(self, slots: tuple[Member | None, ...]) -> Backend:
        return Backend(self.name, self.options, self.servers, slots)


class MapEntry(NamedTuple):
    """One route's wish for a map key; on a key routes share, the smallest rank wins."""

    map: str
    key: str
    value: str
    rank: _Rank


class CrtEntry(NamedTuple):
    """A crt-list line: the route's certificate file and the SNI filter it serves."""

    file: str
    sni: str  # checked host or domain
    wildcard: bool


class RouteParts(NamedTuple):
    """Everything one route contributes to the file set."""

    name: str  # its own backend's name
    backend: Backend  # its own backend (shared routes: the first one's serves them all)
    entries: tuple[MapEntry, ...]
    crt: CrtEntry | None
    files: tuple[tuple[str, bytes], ...]  # its certificate, CA and allowlist files
    checked: int = 0  # server lines with ``check``: each costs HAProxy a descriptor


@dataclass(frozen=True)
class Description:
    """The whole of what HAProxy should serve, as the planner compares it.

    ``head`` is the written part before the first route backend (global,
    defaults, frontends, fixed backends): it depends on the configuration
    alone and is compared whole. ``files`` holds every file but
    ``haproxy.cfg`` and the maps (certificates, crt-list, allowlists, error page).
    """

    head: str
    backends: Mapping[str, Backend]  # route backends in file order, then the spares
    maps: Mapping[str, Mapping[str, str]]  # map file -> key -> value
    files: Mapping[str, bytes]
