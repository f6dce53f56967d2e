"""What HAProxy is serving right now, and the runtime commands that move it to a new file set.

Why: a reload parses the whole configuration again (about a second at 10,000
routes), so route and endpoint changes are applied through the runtime API
whenever it can express them, and the reload comes later, coalesced, in the
background. The runtime API can change ``server`` addresses, weights and
states and map entries, but cannot add or remove a backend. So:

* a **new route** takes a free *spare backend* of its kind (rendered by
  ``render.py`` after the route backends, with the shape of a route without
  annotations): its map entries point at the spare (an *alias*) and its
  members fill the spare's slots;
* a **deleted route** loses its map entries and its servers go to
  maintenance (its backend stays loaded, unused, until the next reload);
* anything else (a changed backend option, certificates, the global or
  frontend part) needs a reload.

:class:`LiveState` is the served configuration in the form the comparison
needs: the part before the first backend, each backend section's text as
it is *effectively* configured (runtime changes applied), the other files
(maps with alias values), and the aliases. :func:`plan` is pure: it returns
the commands and the next state, or a :class:`Fallback` naming why the
change needs a reload.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from shiftnet.router.haproxy.runtime import (
    RuntimeAPI,
    RuntimeAPIError,
    map_entries,
    server_change_commands,
)

CONFIG_NAME = "haproxy.cfg"
SPARE_ADDRESS = "127.0.0.1:1"
# route backend prefix -> spare backend prefix (render.SPARE_OF_PREFIX, kept here to stay pure)
SPARE_OF_PREFIX = {
    "be_http": "be_spare_http",
    "be_edge_http": "be_spare_edge",
    "be_secure": "be_spare_secure",
    "be_tcp": "be_spare_tcp",
}
_SPARE_PREFIXES = tuple(p + ":" for p in SPARE_OF_PREFIX.values())

_SERVER_RE = re.compile(r"^(\s+server\s+)(\S+)\s+(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})(.*)$")
_WEIGHT_RE = re.compile(r"\s+weight\s+(\d+)")
_DISABLED_RE = re.compile(r"\s+disabled(?=\s|$)")
# Health checks are compared away: HAProxy cannot add them at run time, and a
# route served without them until the next reload is still served (with
# ``option redispatch`` and retries); a section served without the checks it
# wants keeps the state unclean, so that reload is owed.
_CHECK_RE = re.compile(r" check inter \S+")


@dataclass(frozen=True)
class Slot:
    """The runtime-changeable part of one ``server`` line."""

    address: str
    port: int
    weight: int
    disabled: bool


@dataclass(frozen=True)
class Fallback:
    """Why a change cannot be applied through the runtime API (the metric's label)."""

    reason: str


@dataclass
class LiveState:
    """The configuration HAProxy effectively serves (see the module docstring)."""

    head: str
    sections: dict[str, str]
    files: dict[str, bytes]  # everything but haproxy.cfg; maps hold alias values
    aliases: dict[str, str] = field(default_factory=dict)  # route backend -> spare
    clean: bool = True  # equal to the files on disk: no reload owed

    @classmethod
    def of(cls, files: dict[str, bytes]) -> LiveState:
        head, sections = split_sections(files.get(CONFIG_NAME, b"").decode())
        others = {n: d for n, d in files.items() if n != CONFIG_NAME}
        return cls(head=head, sections=sections, files=others)


@dataclass(frozen=True)
class Plan:
    commands: list[str]
    state: LiveState
    deferred: dict[str, str] = field(default_factory=dict)  # backend -> why it waits for a reload


def split_sections(text: str) -> tuple[str, dict[str, str]]:
    """``(text before the first backend, {backend name: its section text})``."""
    start = text.find("\nbackend ")
    if start < 0:
        return text, {}
    head = text[: start + 1]
    sections: dict[str, str] = {}
    for i, part in enumerate(text[start + 1 :].split("\nbackend ")):
        section = part if i == 0 else "backend " + part
        name = section[8 : section.find(" ", 8) if " " in section[8:] else None]
        name = name.split("\n", 1)[0]
        sections[name] = section
    return head, sections


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _parse_server(line: str) -> tuple[str, Slot, str] | None:
    s = _SERVER_RE.match(line)
    if s is None:
        return None
    rest = s[5]
    w = _WEIGHT_RE.search(rest)
    slot = Slot(s[3], int(s[4]), int(w[1]) if w else 1, bool(_DISABLED_RE.search(rest)))
    return s[2], slot, _DISABLED_RE.sub("", _WEIGHT_RE.sub("", rest))


def _shape(name: str, section: str) -> tuple[list[str], list[tuple[str, str]], list[Slot]]:
    """A section with its name (and the cookie values derived from it) abstracted away.

    Returns the other lines, the ``(slot name, options)`` of each server and
    each server's runtime part. Two sections of equal shape differ only in
    what ``set server`` can change.
    """
    digest = _digest(name)
    text = section.rstrip("\n").replace(name, "@", 1)
    text = text.replace(digest[:32], "@C").replace(digest[32:60], "@S")
    lines: list[str] = []
    slots: list[tuple[str, str]] = []
    parts: list[Slot] = []
    for line in text.split("\n"):
        parsed = _parse_server(line)
        if parsed is None:
            lines.append(line)
        else:
            slots.append((parsed[0], _CHECK_RE.sub("", parsed[2])))
            parts.append(parsed[1])
    return lines, slots, parts


def _retarget(section_name: str, section: str, target: str, like: str) -> str | None:
    """``section``'s servers written into ``like`` (section ``target``); None: shapes differ."""
    a_lines, a_slots, a_parts = _shape(section_name, section)
    b_lines, b_slots, _ = _shape(target, like)
    if a_lines != b_lines or a_slots != b_slots:
        return None
    out: list[str] = []
    i = 0
    for line in like.split("\n"):
        parsed = _parse_server(line)
        if parsed is None:
            out.append(line)
            continue
        out.append(_server_text(parsed[0], a_parts[i], parsed[2]))
        i += 1
    return "\n".join(out)


def served_section(backend: str, text: str, name: str, old: str) -> str | None:
    """``backend``'s new section ``text`` as served in loaded section ``name`` (itself or a
    spare), or None when the runtime API cannot get there."""
    return _retarget(backend, text, name, old)


def _mismatch(name: str, new: str, old: str) -> str:
    """Why ``new`` cannot be served in ``old``'s place: more members than slots, or options."""
    return "server-slots" if _shape(name, new)[0] == _shape(name, old)[0] else "backend-changed"


def _server_text(name: str, slot: Slot, rest: str) -> str:
    tail = f" weight {slot.weight}" + (" disabled" if slot.disabled else "")
    return f"  server {name} {slot.address}:{slot.port}{rest}{tail}"


def _emptied(section: str) -> str:
    """``section`` with every server in maintenance (a deleted route's backend until reload)."""
    out: list[str] = []
    for line in section.split("\n"):
        parsed = _parse_server(line)
        if parsed is None:
            out.append(line)
        else:
            host, _, port = SPARE_ADDRESS.partition(":")
            out.append(_server_text(parsed[0], Slot(host, int(port), 0, True), parsed[2]))
    return "\n".join(out)


def section_commands(name: str, old: str, new: str) -> list[str] | None:
    """``set server`` commands turning section ``old`` into ``new``; None: they differ otherwise."""
    o_lines, o_slots, o_parts = _shape(name, old)
    n_lines, n_slots, n_parts = _shape(name, new)
    if o_lines != n_lines or o_slots != n_slots:
        return None
    cmds: list[str] = []
    for (srv, _), before, after in zip(n_slots, o_parts, n_parts, strict=True):
        if before == after:
            continue
        cmds += server_change_commands(name, srv, before, after)
    return cmds


def translate_map(data: bytes, aliases: dict[str, str], drop: set[str] | None = None) -> bytes:
    """A map file with aliased route backends replaced by their spares, ``drop``'s entries out."""
    names = set(aliases) | (drop or set())
    if not names or not any((" " + b + "\n").encode() in data for b in names):
        return data
    out: list[str] = []
    for line in data.decode().split("\n"):
        key, sep, value = line.partition(" ")
        if sep and drop and value in drop:
            continue
        spare = aliases.get(value)
        out.append(f"{key} {spare}" if sep and spare else line)
    return "\n".join(out).encode()


def map_commands(map_ref: str, old: bytes, new: bytes) -> list[str]:
    """``del map``/``set map``/``add map`` commands turning one map's entries into another's.

    The renderer's maps are exact or longest-prefix lookups (trees), so entry
    order does not matter and runtime edits equal loading the new file. Only
    the lines that differ are parsed: a 10,000-line map costs two set
    differences, not two full parses.
    """
    old_lines, new_lines = set(old.split(b"\n")), set(new.split(b"\n"))
    before = map_entries(b"\n".join(old_lines - new_lines))
    after = map_entries(b"\n".join(new_lines - old_lines))
    cmds = [RuntimeAPI.del_map_cmd(map_ref, k) for k in sorted(before.keys() - after.keys())]
    for key in sorted(after):
        if key not in before:
            cmds.append(RuntimeAPI.add_map_cmd(map_ref, key, after[key]))
        elif before[key] != after[key]:
            cmds.append(RuntimeAPI.set_map_cmd(map_ref, key, after[key]))
    return cmds


def _spare_kind(backend: str) -> str | None:
    prefix = backend.split(":", 1)[0]
    return SPARE_OF_PREFIX.get(prefix) if ":" in backend else None


def plan(
    live: LiveState,
    files: dict[str, bytes],
    split: tuple[str, dict[str, str]] | None = None,
) -> Plan | Fallback:
    """The runtime commands that make HAProxy serve ``files``, or why a reload is needed.

    ``split`` is ``split_sections`` of the configuration file when the caller
    already has it (the renderer keeps it; cutting 4 MB of text costs more
    than the rest of the plan).
    """
    if set(files) - {CONFIG_NAME} != set(live.files):
        return Fallback("files")
    changed = [n for n in live.files if files[n] != live.files[n] and not n.endswith(".map")]
    if changed:
        return Fallback("files")  # certificates, crt-list, allowlists, error pages
    head, wanted = split if split is not None else split_sections(files[CONFIG_NAME].decode())
    if head != live.head:
        return Fallback("global")
    # 1. Which route backends the served configuration lacks, and which spares they take.
    aliases = {b: s for b, s in live.aliases.items() if b in wanted and b not in live.sections}
    # New routes no spare can serve (none left, or options a spare lacks): left out
    # (503, as before they existed) until the reload that this plan then owes.
    deferred: dict[str, str] = {}
    released = set(live.aliases.values()) - set(aliases.values())
    in_use = set(aliases.values()) | released
    free: dict[str, list[str]] | None = None
    for name in wanted:
        if name in live.sections or name in aliases:
            continue
        kind = _spare_kind(name)
        if kind is None:
            return Fallback("new-backend")
        if free is None:
            free = _free_spares(live, wanted, in_use)
        candidates = free.get(kind)
        if not candidates:
            deferred[name] = "no-spare"
            continue
        spare = candidates[0]
        text = _retarget(name, wanted[name], spare, wanted[spare])
        if text is None:
            deferred[name] = "backend-shape"
            continue
        aliases[name] = candidates.pop(0)
    # 2. The sections as they should be served.
    target: dict[str, str] = {}
    for name, spare in aliases.items():
        text = _retarget(name, wanted[name], spare, wanted[spare])
        if text is None:  # an aliased route whose options changed: the reload serves it
            deferred[name] = "backend-shape"
            continue
        target[spare] = text
    for name in deferred:
        aliases.pop(name, None)
    for name, section in wanted.items():
        if name in aliases or name in target or name in deferred:
            continue
        old = live.sections.get(name)
        if old is None or old == section:
            target[name] = section
            continue
        # Served with the options HAProxy loaded (health checks may differ).
        text = _retarget(name, section, name, old)
        if text is None:
            return Fallback(_mismatch(name, section, old))
        target[name] = text
    for name, section in live.sections.items():
        if name not in target:
            target[name] = _emptied(section)  # a deleted route: unused until the reload
    if set(target) != set(live.sections):
        return Fallback("new-backend")
    cmds: list[str] = []
    for name, section in target.items():
        old = live.sections[name]
        if old != section:
            more = section_commands(name, old, section)
            if more is None:
                return Fallback("backend-changed")
            cmds += more
    # 3. Map entries, with aliased backends replaced by their spares.
    served: dict[str, bytes] = {}
    drop = set(deferred)
    try:
        for name, data in live.files.items():
            new = translate_map(files[name], aliases, drop) if name.endswith(".map") else data
            if new != data:
                cmds += map_commands(name, data, new)
            served[name] = new
    except RuntimeAPIError:
        return Fallback("map-value")  # a key or value the CLI cannot carry
    clean = not aliases and not deferred and target == wanted
    state = LiveState(head=head, sections=target, files=served, aliases=aliases, clean=clean)
    return Plan(commands=cmds, state=state, deferred=deferred)


def _free_spares(live: LiveState, wanted: dict[str, str], in_use: set[str]) -> dict[str, list[str]]:
    """Spare backends loaded, still rendered and not serving a route, per kind, lowest first."""
    free: dict[str, list[str]] = {}
    for name in live.sections:
        if is_spare(name) and name in wanted and name not in in_use:
            free.setdefault(name.split(":", 1)[0], []).append(name)
    for names in free.values():
        names.sort(key=_spare_order)
    return free


def _spare_order(name: str) -> tuple[str, int]:
    prefix, _, index = name.rpartition(":")
    return (prefix, int(index)) if index.isdigit() else (name, -1)


def is_spare(name: str) -> bool:
    return name.startswith(_SPARE_PREFIXES)
