"""What HAProxy is serving right now, and the runtime commands that move it to a new description.

Why: a reload parses the whole configuration again (about a second at 10,000
routes), so route and endpoint changes are applied through the runtime API
whenever it can express them, and the reload comes later, coalesced, in the
background. The runtime API can change ``server`` addresses, weights and
states and map entries, but cannot add or remove a backend. So:

* a **new route** takes a free *spare backend* of its kind (described by
  ``build.spare_backends`` with the options of a route without annotations):
  its map entries point at the spare (an *alias*) and its members fill the
  spare's slots;
* a **deleted route** loses its map entries and its servers go to
  maintenance (its backend stays loaded, unused, until the next reload);
* a route **certificate** that is new, changed or gone is loaded, replaced
  or removed with the ``ssl cert``/``ssl crt-list`` commands
  (``live_certs.py``), before the map entries that use it;
* a **route whose backend the reload must bring** (options no spare has,
  or no spare left) while HAProxy serves the route already keeps what
  serves it until that reload: its spare (with its members set again when
  the slots allow), or, for a route leaving a shared backend, the map
  entries it had, as long as the backend they name serves the route's
  members (held, not emptied, when no route backend of the new
  description uses it any more);
* anything else (a changed option of a loaded backend, CA files,
  allowlists, the global or frontend part) needs a reload.

:class:`LiveState` is the served configuration as a description: each
backend as it is *effectively* configured (runtime changes applied), the
maps with alias values, the other files, and the aliases. :func:`plan`
compares it with a new description backend by backend, slot by slot and map
entry by map entry; it is pure and returns the commands and the next state,
or a :class:`Fallback` naming why the change needs a reload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shiftnet.api.names import is_digits
from shiftnet.router.haproxy import commands
from shiftnet.router.haproxy.commands import RuntimeAPIError, server_change_commands
from shiftnet.router.haproxy.description import Backend, Description, Member, ServerOptions
from shiftnet.router.haproxy.live_certs import certificate_commands
from shiftnet.router.haproxy.names import is_spare, server_name, spare_kind


@dataclass(frozen=True)
class Fallback:
    """Why a change cannot be applied through the runtime API (the metric's label)."""

    reason: str


@dataclass
class LiveState:
    """The configuration HAProxy effectively serves (see the module docstring)."""

    head: str
    backends: dict[str, Backend]
    maps: dict[str, Mapping[str, str]]  # map file -> entries, alias values in place
    files: Mapping[str, bytes]  # every other file but haproxy.cfg
    aliases: dict[str, str] = field(default_factory=dict)  # route backend -> spare
    clean: bool = True  # equal to the files on disk: no reload owed

    @classmethod
    def of(cls, description: Description) -> LiveState:
        return cls(
            head=description.head,
            backends=dict(description.backends),
            maps=dict(description.maps),
            files=description.files,
        )


@dataclass(frozen=True)
class Plan:
    commands: list[str]
    state: LiveState
    deferred: dict[str, str] = field(default_factory=dict)  # backend -> why it waits for a reload


def _runtime_shape(backend: Backend) -> tuple[object, ServerOptions, int]:
    """What the runtime API cannot change: options, server options (but for health
    checks) and the slot count.

    Health checks are compared away: HAProxy cannot add them at run time, and a
    route served without them until the next reload is still served (with
    ``option redispatch`` and retries); a backend served without the checks it
    wants keeps the state unclean, so that reload is owed.
    """
    return (backend.options, backend.servers.without_checks(), len(backend.slots))


def served_as(new: Backend, loaded: Backend) -> Backend | None:
    """``new``'s members in loaded backend ``loaded`` (itself or a spare), or None when the
    runtime API cannot get there."""
    if new is loaded:
        return loaded
    if _runtime_shape(new) != _runtime_shape(loaded):
        return None
    return loaded.with_slots(new.slots)


def held_in(new: Backend, serving: Backend) -> Backend | None:
    """``serving`` (a route's spare) with ``new``'s members but its own loaded options, or
    None when its slots cannot take them: what serves a route until the reload brings
    ``new``."""
    if _members(new) == _members(serving):
        return serving
    if (new.servers.without_checks(), len(new.slots)) != (
        serving.servers.without_checks(),
        len(serving.slots),
    ):
        return None
    return serving.with_slots(new.slots)


def _members(backend: Backend) -> list[Member]:
    return sorted(m for m in backend.slots if m is not None)


def _mismatch(new: Backend, old: Backend) -> str:
    """Why ``new`` cannot be served in ``old``'s place: more members than slots, or options."""
    return "server-slots" if new.options == old.options else "backend-changed"


def _emptied(backend: Backend) -> Backend:
    """``backend`` with every slot empty (a deleted route's backend until the reload)."""
    return backend.with_slots((None,) * len(backend.slots))


def backend_commands(old: Backend, new: Backend) -> list[str] | None:
    """``set server`` commands turning ``old`` into ``new``; None: they differ otherwise."""
    if _runtime_shape(old) != _runtime_shape(new):
        return None
    if old.slots == new.slots:
        return []
    cmds: list[str] = []
    name = old.name
    before, after = old.slot_states(), new.slot_states()
    for i, (was, now) in enumerate(zip(before, after, strict=True)):
        if was != now:
            cmds += server_change_commands(name, server_name(i), was, now)
    return cmds


def served_map(
    entries: Mapping[str, str], aliases: dict[str, str], drop: set[str]
) -> Mapping[str, str]:
    """A map's entries with aliased route backends replaced by their spares, ``drop``'s out."""
    if not aliases and not drop:
        return entries
    return {key: aliases.get(value, value) for key, value in entries.items() if value not in drop}


def map_commands(map_ref: str, old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """``del map``/``set map``/``add map`` commands turning one map's entries into another's.

    The maps are exact or longest-prefix lookups (trees), so entry order does
    not matter and runtime edits equal loading the new file.
    """
    if old is new or old == new:
        return []
    cmds = [commands.del_map(map_ref, k) for k in sorted(old.keys() - new.keys())]
    for key in sorted(k for k, v in new.items() if old.get(k) != v):
        if key not in old:
            cmds.append(commands.add_map(map_ref, key, new[key]))
        else:
            cmds.append(commands.set_map(map_ref, key, new[key]))
    return cmds


def plan(live: LiveState, wanted: Description) -> Plan | Fallback:
    """The runtime commands that make HAProxy serve ``wanted``, or why a reload is needed.

    A spare a route leaves (deleted, or joined to a shared backend) is not
    given to another route in the same step: between its ``set server`` and
    the map edits, the old route's entries would still name it and reach the
    new route's pods. When a route waits for want of a spare while the step
    frees some, a second step follows in the same command list: the first has
    emptied those spares and moved every entry off them, so they are free. So
    routes whose pods arrive after them (several sharing one backend by then)
    are served at once, not at the next reload.
    """
    first = _plan_step(live, wanted)
    if isinstance(first, Fallback) or "no-spare" not in first.deferred.values():
        return first
    if not set(live.aliases.values()) - set(first.state.aliases.values()):
        return first  # no spare freed: a second step would find none either
    second = _plan_step(first.state, wanted)
    if isinstance(second, Fallback):
        return first
    return Plan(
        commands=first.commands + second.commands, state=second.state, deferred=second.deferred
    )


def _plan_step(live: LiveState, wanted: Description) -> Plan | Fallback:
    """One step of :func:`plan`: spares freed here are not yet taken."""
    if set(wanted.maps) != set(live.maps):
        return Fallback("files")
    try:
        cert_cmds = certificate_commands(live.files, wanted.files)
    except RuntimeAPIError:
        return Fallback("certificate")  # a file name or PEM the CLI cannot carry
    if cert_cmds is None:
        return Fallback("files")  # CA files, allowlists, error pages
    if wanted.head != live.head:
        return Fallback("global")
    backends = wanted.backends
    loaded = live.backends
    # 1. Which route backends the served configuration lacks, and which spares they take.
    aliases = {b: s for b, s in live.aliases.items() if b in backends and b not in loaded}
    # Route backends no spare can serve (none left, or options a spare lacks) wait for
    # the reload that this plan then owes: a new route is left out (503, as before it
    # existed), a served one stays where it is served (step 3).
    deferred: dict[str, str] = {}
    released = set(live.aliases.values()) - set(aliases.values())
    in_use = set(aliases.values()) | released
    free: dict[str, list[str]] | None = None
    for name in [n for n in backends if n not in loaded]:
        if name in aliases:
            continue
        kind = spare_kind(name)
        if kind is None:
            return Fallback("new-backend")
        if free is None:
            free = _free_spares(live, backends, in_use)
        candidates = free.get(kind)
        if not candidates:
            deferred[name] = "no-spare"
            continue
        if served_as(backends[name], backends[candidates[0]]) is None:
            deferred[name] = "backend-shape"
            continue
        aliases[name] = candidates.pop(0)
    # 2. The backends as they should be served: most are the very objects loaded.
    target: dict[str, Backend] = {}
    for name, spare in aliases.items():
        served = served_as(backends[name], backends[spare])
        if served is None:  # an aliased route whose options changed: the reload serves them
            deferred[name] = "backend-shape"
            served = held_in(backends[name], loaded[spare])  # meanwhile its spare as loaded
            if served is None:
                continue
        target[spare] = served
    for name in deferred:
        if aliases.get(name) not in target:
            aliases.pop(name, None)
    skip = aliases.keys() | target.keys() | deferred.keys()
    changed: dict[str, Backend] = {}
    for name in [n for n, b in backends.items() if loaded.get(n, b) is not b]:
        if name in skip:
            continue
        backend, old = backends[name], loaded[name]
        if old == backend:
            continue
        # Served with the options HAProxy loaded (health checks may differ).
        served = served_as(backend, old)
        if served is None:
            return Fallback(_mismatch(backend, old))
        changed[name] = served
    target.update({n: changed.get(n, b) for n, b in backends.items() if n not in skip})
    if not target.keys() <= loaded.keys():
        return Fallback("new-backend")
    gone = [n for n in loaded if n not in target]  # no route's any more: emptied, unless held
    # 3. Map entries, with aliased backends replaced by their spares; a deferred route
    # keeps the entries it had where their backend serves its members (held, if gone).
    drop = {n for n in deferred if n not in aliases}
    maps: dict[str, Mapping[str, str]] = {}
    held: set[str] = set()
    for name, entries in live.maps.items():
        new = served_map(wanted.maps[name], aliases, drop)
        if drop:
            new = _kept(wanted.maps[name], entries, new, drop, backends, target, loaded, held)
        maps[name] = new
    for name in gone:
        target[name] = loaded[name] if name in held else _emptied(loaded[name])
    cmds: list[str] = list(cert_cmds)  # certificates before the map entries that use them
    try:
        for name in [n for n, b in target.items() if loaded[n] is not b]:
            old, backend = loaded[name], target[name]
            if old != backend:
                more = backend_commands(old, backend)
                if more is None:
                    return Fallback("backend-changed")
                cmds += more
    except RuntimeAPIError:
        return Fallback("backend-changed")  # an address the runtime API cannot carry
    try:
        for name, entries in live.maps.items():
            cmds += map_commands(name, entries, maps[name])
    except RuntimeAPIError:
        return Fallback("map-value")  # a key or value the CLI cannot carry
    clean = not aliases and not deferred and target == backends
    state = LiveState(
        head=wanted.head,
        backends=target,
        maps=maps,
        files=wanted.files if cert_cmds else live.files,
        aliases=aliases,
        clean=clean,
    )
    return Plan(commands=cmds, state=state, deferred=deferred)


def _kept(
    wanted: Mapping[str, str],
    served: Mapping[str, str],
    new: Mapping[str, str],
    drop: set[str],
    described: Mapping[str, Backend],
    target: Mapping[str, Backend],
    loaded: Mapping[str, Backend],
    held: set[str],
) -> Mapping[str, str]:
    """``new`` (one map without ``drop``'s entries) with the served entries of those routes
    back where the backend they name serves the route's members, so a served route is
    not lost while it waits for a reload; gone backends kept in use are added to ``held``."""
    kept = dict(new)
    for key, value in wanted.items():
        if value not in drop or key not in served:
            continue
        old = served[key]
        serving = target[old] if old in target else loaded.get(old)  # gone: as loaded
        if serving is None:
            continue  # a fixed backend (the redirect), not a route's
        members = _members(serving)
        if members and members == _members(described[value]):
            kept[key] = old
            if old not in target:
                held.add(old)
    return kept


def _free_spares(
    live: LiveState, wanted: Mapping[str, Backend], in_use: set[str]
) -> dict[str, list[str]]:
    """Spare backends loaded, still described and not serving a route, per kind, lowest first."""
    free: dict[str, list[str]] = {}
    for name in live.backends:
        if is_spare(name) and name in wanted and name not in in_use:
            free.setdefault(name.split(":", 1)[0], []).append(name)
    for names in free.values():
        names.sort(key=_spare_order)
    return free


def _spare_order(name: str) -> tuple[str, int]:
    prefix, _, index = name.rpartition(":")
    return (prefix, int(index)) if is_digits(index) else (name, -1)
