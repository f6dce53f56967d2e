"""The rendered file set kept up to date: a changed route re-renders its own parts only.

Why: rendering 10,000 routes from scratch costs most of a second; most
syncs change one route. :class:`Assembly` keeps each route's rendered parts
(backend section, map entries, crt-list line, own files, from
``render._policy_parts``) and, per map key, every route that wants it, so a
change re-renders that route, re-picks the winners of its keys (the longest
route path; then the route name) and re-joins only the maps it touched.
:func:`shiftnet.router.haproxy.render.render` is this class fed everything
at once, so a full render and a sequence of updates give byte-identical
files (``tests/unit/router/test_assembly.py``).

Routes whose backend sections would differ only in their names (same pods,
same options: ``render.section_key``) share one HAProxy backend, named after
the first of them by route key (``ROUTER_SHARE_BACKENDS``). HAProxy's cost
per request grows with its backend and server count (``docs/performance.md``,
"Lookup cost"), and each backend keeps its own idle server connections; a
backend per *distinct* section keeps what the routes need and no more. A
route alone in its group renders exactly as without sharing.

Pure: no I/O, no clocks.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping
from typing import NamedTuple

from shiftnet.router.admission import RouteKey
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import escape, live
from shiftnet.router.haproxy import render as r
from shiftnet.router.model import L7Policy

log = logging.getLogger(__name__)

_Rank = tuple[int, int, str]


class _Change(NamedTuple):
    """What the last update did: the sections it changed, and whether anything else changed."""

    sections: dict[str, str]
    other: bool


class Assembly:
    """Per-route rendered parts and the file set they make together."""

    def __init__(self, config: RouterConfig, paths: r.RenderPaths) -> None:
        self.config = config
        self._defaults = r._BackendDefaults.of(config)
        self._paths = paths
        self._checked = 0  # checked server lines in self.parts: maxconn is fitted to them
        self._head, self.fit = r.fit_head(config, paths, 0)
        self._spares = r._spares_text(config.spare_backends, self._defaults)
        self.parts: dict[RouteKey, r._PolicyParts] = {}
        self.skipped: dict[RouteKey, str] = {}
        # Routes HAProxy itself refused (router/haproxy/isolation.py): left out with why.
        self.refused: dict[RouteKey, str] = {}
        self._order: list[RouteKey] = []  # routes whose own section is rendered, sorted
        self._wants: dict[str, dict[str, dict[RouteKey, tuple[_Rank, str]]]] = {
            m: {} for m in r.ALL_MAPS
        }
        self._map_lines: dict[str, dict[str, str]] = {m: {} for m in r.ALL_MAPS}  # key -> line
        self._map_keys: dict[str, list[str]] = {m: [] for m in r.ALL_MAPS}  # sorted keys
        self._map_bytes: dict[str, bytes] = {}
        self._dirty_maps: set[str] = set(r.ALL_MAPS)
        self._sections: dict[RouteKey, str] = {}  # as split_sections() cuts them
        self._files: dict[RouteKey, tuple[tuple[str, bytes], ...]] = {}
        self._crt: dict[RouteKey, str] = {}
        self._config_bytes: bytes | None = None
        self._crt_bytes: bytes | None = None
        self._split_head: tuple[str, str, dict[str, str], dict[str, str]] | None = None
        self._share = config.share_backends
        self._group_of: dict[RouteKey, r.SectionKey] = {}  # shareable routes only
        self._groups: dict[r.SectionKey, list[RouteKey]] = {}  # sorted: the first one serves
        self._served: dict[RouteKey, str] = {}  # route -> the backend its map entries name
        self._last: _Change = _Change({}, False)

    def update(self, policies: Mapping[RouteKey, L7Policy | None]) -> dict[RouteKey, str | None]:
        """Apply changed policies (None: removed); returns the backend serving each (None: none)."""
        bulk = not self.parts and len(policies) > 64  # start-up: maps built once at the end
        if bulk:
            self._add_all(policies)
            return {k: self._served.get(k) for k in policies}
        before = {k: (self._served.get(k), self.parts.get(k)) for k in policies}
        touched: set[r.SectionKey] = set()
        for key in sorted(policies):
            left = self._remove(key)
            if left is not None:
                touched.add(left)
            group = self._render_one(key, policies[key], bulk=False)
            if group is not None:
                touched.add(group)
        regrouped = False
        for group in touched:
            members = self._groups.get(group)
            if members is not None:
                regrouped |= self._serve_group(members, policies, bulk=False)
        self._last = self._change(before, regrouped)
        return {k: self._served.get(k) for k in policies}

    def _add_all(self, policies: Mapping[RouteKey, L7Policy | None]) -> None:
        """:meth:`update` of an empty assembly: groups settled and maps built once, at the end."""
        for key in sorted(policies):
            self.skipped.pop(key, None)  # routes all skipped before leave no parts
            self._render_one(key, policies[key], bulk=True)
        for members in self._groups.values():
            self._serve_group(members, policies, bulk=True)
        self._order.sort()
        self._rebuild_maps()
        self._last = _Change({}, True)

    def _render_one(
        self, key: RouteKey, policy: L7Policy | None, bulk: bool
    ) -> r.SectionKey | None:
        """Render route ``key``; serve it now unless it joins a group (returned)."""
        if policy is None:
            return None
        if key in self.refused:
            self.skipped[key] = self.refused[key]
            return None
        try:
            parts = r._policy_parts(policy, self._defaults)
        except escape.UnsafeValue as err:
            self.skipped[key] = str(err)
            log.warning(
                "route skipped in haproxy configuration route=%s/%s reason=%r",
                policy.namespace,
                policy.name,
                str(err),
            )
            return None
        self.parts[key] = parts
        group = r.section_key(policy) if self._share else None
        if group is None:
            self._serve(key, parts.backend, bulk)
            return None
        self._group_of[key] = group
        members = self._groups.get(group)
        if members is None:
            self._groups[group] = [key]
        elif members[-1] < key:
            members.append(key)  # keys come sorted: the usual case
        else:
            bisect.insort(members, key)
        return group

    def _serve_group(
        self, members: list[RouteKey], changed: Mapping[RouteKey, object], bulk: bool
    ) -> bool:
        """Point every member at the first one's backend; True when an unchanged one moved."""
        backend = self.parts[members[0]].backend
        moved = False
        for member in members:
            if self._served.get(member) != backend:
                if member in self._served:
                    self._unserve(member)
                moved |= member not in changed
                self._serve(member, backend, bulk)
        return moved

    def runtime_sections(self) -> dict[str, str] | None:
        """The last update's changed sections, when nothing else changed (None otherwise).

        Only then can the runtime API serve the update at once (new servers of
        existing backends) without the full plan: no map entry, crt-list
        line, file or backend came or went.
        """
        return None if self._last.other else self._last.sections

    def _change(
        self,
        before: dict[RouteKey, tuple[str | None, r._PolicyParts | None]],
        regrouped: bool,
    ) -> _Change:
        if regrouped:
            return _Change({}, True)
        sections: dict[str, str] = {}
        for key, (served, old) in before.items():
            new = self.parts.get(key)
            if (
                old is None
                or new is None
                or served != self._served.get(key)
                or (old.backend, old.entries, old.crt_line, old.files)
                != (new.backend, new.entries, new.crt_line, new.files)
            ):
                return _Change({}, True)
            if served == new.backend:  # it holds the section its routes share
                sections[served] = new.text
        return _Change(sections, False)

    def files(self) -> dict[str, bytes]:
        """The whole file set, sorted by name (maps re-joined only when they changed)."""
        config_bytes = self._config()
        if self._crt_bytes is None:
            self._crt_bytes = "".join(sorted(self._crt.values())).encode()
        for name in self._dirty_maps:
            lines = self._map_lines[name]
            self._map_bytes[name] = "".join([lines[k] for k in self._map_keys[name]]).encode()
        self._dirty_maps = set()
        files: dict[str, bytes] = {r.CONFIG_FILE: config_bytes, r.CRT_LIST: self._crt_bytes}
        if not self.config.errorfile_503:
            files[r.ERROR_PAGE_503] = r.DEFAULT_503_PAGE
        for own in self._files.values():
            files.update(own)
        files.update(self._map_bytes)
        return dict(sorted(files.items()))

    def split(self) -> tuple[str, dict[str, str]]:
        """``live.split_sections`` of the configuration file, without cutting 4 MB of text.

        The driver's runtime planner compares sections; handing it the ones
        kept here (the very same strings as last time for unchanged routes)
        makes that comparison cost microseconds per route.
        """
        config_bytes = self._config()  # the head may have moved with the checked-server count
        if not self._spares:  # the last route section would keep its final newline
            return live.split_sections(config_bytes.decode())
        if self._split_head is None or self._split_head[0] != self._head:
            head, fixed = live.split_sections(self._head + "backend x\n")
            fixed.pop("x", None)
            spares = live.split_sections("\n" + self._spares)[1]
            self._split_head = (self._head, head, fixed, spares)
        _, head, fixed, spares = self._split_head
        sections = dict(fixed)
        for key in self._order:
            text = self._sections[key]
            sections[self.parts[key].backend] = text
        sections.update(spares)
        return head, sections

    def _config(self) -> bytes:
        """``haproxy.cfg``, joined again only after a change (or a new fitted head)."""
        if self._config_bytes is None or self.fit.checked != self._checked:
            self._head, self.fit = r.fit_head(self.config, self._paths, self._checked)
            sections = "".join(self.parts[k].text for k in self._order)
            self._config_bytes = (self._head + sections + self._spares).encode()
        return self._config_bytes

    @property
    def backends(self) -> dict[RouteKey, str]:
        """The backend serving each rendered route (shared ones name the same backend)."""
        return {k: self._served[k] for k in sorted(self._served)}

    # ------------------------------------------------------------ internals
    def _serve(self, key: RouteKey, backend: str, bulk: bool = False) -> None:
        """Route ``key``'s map entries name ``backend``; its own, if so, joins the config."""
        parts = self.parts[key]
        own = parts.backend
        self._served[key] = backend
        if backend == own:
            self._checked += parts.checked
            if bulk or (self._order and self._order[-1] < key):
                self._order.append(key)  # keys come sorted (bulk: sorted once at the end)
            else:
                bisect.insort(self._order, key)
            self._sections[key] = parts.text[:-1]  # split_sections leaves the last newline out
        entries = parts.entries
        if bulk:
            wants = self._wants
            for map_name, map_key, value, rank in entries:
                by_key = wants[map_name]
                entry = (rank, backend if value == own else value)
                wanting = by_key.get(map_key)
                if wanting is None:
                    by_key[map_key] = {key: entry}
                else:
                    wanting[key] = entry
        else:
            for map_name, map_key, value, rank in entries:
                self._want(map_name, map_key, key, (rank, backend if value == own else value))
        if parts.files:
            self._files[key] = parts.files
        if parts.crt_line is not None:
            self._crt[key] = parts.crt_line
            self._crt_bytes = None
        self._config_bytes = None

    def _unserve(self, key: RouteKey) -> None:
        parts = self.parts[key]
        if self._served.pop(key) == parts.backend:
            self._checked -= parts.checked
            del self._order[bisect.bisect_left(self._order, key)]
            del self._sections[key]
        for map_name, map_key, _, _ in parts.entries:
            self._want(map_name, map_key, key, None)
        self._files.pop(key, None)
        if self._crt.pop(key, None) is not None:
            self._crt_bytes = None
        self._config_bytes = None

    def _remove(self, key: RouteKey) -> r.SectionKey | None:
        """Forget route ``key``; returns the group it left, which :meth:`update` settles."""
        self.skipped.pop(key, None)
        if key in self._served:
            self._unserve(key)
        self.parts.pop(key, None)
        group = self._group_of.pop(key, None)
        if group is not None:
            members = self._groups[group]
            del members[bisect.bisect_left(members, key)]
            if not members:
                del self._groups[group]
                return None
        return group

    def _rebuild_maps(self) -> None:
        """Every map's sorted keys and winning lines from ``_wants`` at once (start-up)."""
        for name, by_key in self._wants.items():
            self._map_keys[name] = sorted(by_key)
            self._map_lines[name] = {
                k: f"{k} {min(w.values())[1] if len(w) > 1 else next(iter(w.values()))[1]}\n"
                for k, w in by_key.items()
            }
            self._dirty_maps.add(name)

    def _want(
        self, name: str, map_key: str, key: RouteKey, entry: tuple[_Rank, str] | None
    ) -> None:
        """Route ``key`` wants (or, with None, no longer wants) ``map_key`` in map ``name``."""
        wanting = self._wants[name].setdefault(map_key, {})
        if entry is None:
            wanting.pop(key, None)
        else:
            wanting[key] = entry
        lines, keys = self._map_lines[name], self._map_keys[name]
        if not wanting:
            del self._wants[name][map_key]
            if lines.pop(map_key, None) is not None:
                del keys[bisect.bisect_left(keys, map_key)]
        else:
            line = f"{map_key} {min(wanting.values())[1]}\n"
            if map_key not in lines:
                bisect.insort(keys, map_key)
            lines[map_key] = line
        self._dirty_maps.add(name)
