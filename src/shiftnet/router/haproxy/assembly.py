"""The description and the file set kept up to date: a changed route is described again alone.

Why: describing and writing 10,000 routes from scratch costs most of a
second; most syncs change one route. :class:`Assembly` keeps each route's
description (``build.route_parts``: backend, map entries, crt-list entry,
own files) with its written section and, per map key, every route that
wants it, so a change describes that route again, re-picks the winners of
its keys (the longest route path; then the route name) and re-joins only
the maps it touched. :func:`shiftnet.router.haproxy.render.render` is this
class fed everything at once, so a full render and a sequence of updates
give byte-identical files (``tests/unit/router/test_incremental.py``).

Routes whose backends would differ only in their names (same pods, same
options: ``build.section_key``) share one HAProxy backend, named after
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
from shiftnet.router.haproxy import build, escape, identity, writer
from shiftnet.router.haproxy.description import Backend, Description, RouteParts
from shiftnet.router.haproxy.limits import MaxconnFit, fit_maxconn
from shiftnet.router.haproxy.names import ALL_MAPS, CONFIG_FILE, CRT_LIST, ERROR_PAGE_503
from shiftnet.router.haproxy.writer import DEFAULT_503_PAGE, RenderPaths
from shiftnet.router.model import L7Policy

log = logging.getLogger(__name__)

_Rank = tuple[int, int, str]


SectionKey = tuple[object, ...]


class _Change(NamedTuple):
    """What the last update did: the backends it changed, and whether anything else changed."""

    backends: dict[str, Backend]
    other: bool


def fit_head(config: RouterConfig, paths: RenderPaths, checked: int) -> tuple[str, MaxconnFit]:
    """The text before the first backend, with ``maxconn`` fitted to ``checked`` servers.

    ``config.file_descriptor_limit`` is the descriptor budget (0: unknown, keep
    ``config.max_connections``); ``checked`` is the sum of the routes' ``checked`` counts.
    """
    fit = fit_maxconn(
        config.max_connections, config.file_descriptor_limit, checked, max(1, config.threads)
    )
    return writer.head_text(config, paths, fit), fit


class Assembly:
    """Per-route rendered parts and the file set they make together."""

    def __init__(self, config: RouterConfig, paths: RenderPaths) -> None:
        self.config = config
        self._defaults = build.BackendDefaults.of(config)
        self._paths = paths
        self._checked = 0  # checked server lines in self.parts: maxconn is fitted to them
        self._head, self.fit = fit_head(config, paths, 0)
        self._spares = build.spare_backends(config.spare_backends, self._defaults)
        self._spares_text = writer.spares_text(self._spares)
        self.parts: dict[RouteKey, RouteParts] = {}
        self.skipped: dict[RouteKey, str] = {}
        # Routes HAProxy itself refused (router/haproxy/isolation.py): left out with why.
        self.refused: dict[RouteKey, str] = {}
        self._order: list[RouteKey] = []  # routes whose own section is rendered, sorted
        self._wants: dict[str, dict[str, dict[RouteKey, tuple[_Rank, str]]]] = {
            m: {} for m in ALL_MAPS
        }
        self._map_values: dict[str, dict[str, str]] = {m: {} for m in ALL_MAPS}  # the winners
        self._map_lines: dict[str, dict[str, str]] = {m: {} for m in ALL_MAPS}  # ... written
        self._map_keys: dict[str, list[str]] = {m: [] for m in ALL_MAPS}  # sorted keys
        self._map_bytes: dict[str, bytes] = {}
        self._map_views: dict[str, dict[str, str]] = {}  # copies handed out in descriptions
        self._dirty_maps: set[str] = set(ALL_MAPS)
        self._texts: dict[RouteKey, str] = {}  # written sections of routes serving their own
        self._files: dict[RouteKey, tuple[tuple[str, bytes], ...]] = {}
        self._crt: dict[RouteKey, str] = {}
        self._config_bytes: bytes | None = None
        self._crt_bytes: bytes | None = None
        self._share = config.share_backends
        self._group_of: dict[RouteKey, SectionKey] = {}  # shareable routes only
        self._groups: dict[SectionKey, list[RouteKey]] = {}  # sorted: the first one serves
        self._served: dict[RouteKey, str] = {}  # route -> the backend its map entries name
        self._last: _Change = _Change({}, False)

    def update(self, policies: Mapping[RouteKey, L7Policy | None]) -> dict[RouteKey, str | None]:
        """Apply changed policies (None: removed); returns the backend serving each (None: none)."""
        bulk = not self.parts and len(policies) > 64  # start-up: maps built once at the end
        if bulk:
            self._add_all(policies)
            return {k: self._served.get(k) for k in policies}
        before = {k: (self._served.get(k), self.parts.get(k)) for k in policies}
        touched: set[SectionKey] = set()
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

    def _render_one(self, key: RouteKey, policy: L7Policy | None, bulk: bool) -> SectionKey | None:
        """Describe route ``key``; serve it now unless it joins a group (returned)."""
        if policy is None:
            return None
        if key in self.refused:
            self.skipped[key] = self.refused[key]
            return None
        try:
            parts = build.route_parts(policy, self._defaults)
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
        group = build.section_key(policy) if self._share else None
        if group is None:
            self._serve(key, parts.name, bulk)
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
        backend = self.parts[members[0]].name
        moved = False
        for member in members:
            if self._served.get(member) != backend:
                if member in self._served:
                    self._unserve(member)
                moved |= member not in changed
                self._serve(member, backend, bulk)
        return moved

    def runtime_backends(self) -> dict[str, Backend] | None:
        """The last update's changed backends, when nothing else changed (None otherwise).

        Only then can the runtime API serve the update at once (new servers of
        existing backends) without the full plan: no map entry, crt-list
        entry, file or backend came or went.
        """
        return None if self._last.other else self._last.backends

    def _change(
        self,
        before: dict[RouteKey, tuple[str | None, RouteParts | None]],
        regrouped: bool,
    ) -> _Change:
        if regrouped:
            return _Change({}, True)
        backends: dict[str, Backend] = {}
        for key, (served, old) in before.items():
            new = self.parts.get(key)
            if (
                old is None
                or new is None
                or served != self._served.get(key)
                or (old.name, old.entries, old.crt, old.files)
                != (new.name, new.entries, new.crt, new.files)
            ):
                return _Change({}, True)
            if served == new.name:  # it holds the backend its routes share
                backends[served] = new.backend
        return _Change(backends, False)

    def files(self) -> dict[str, bytes]:
        """The whole file set, sorted by name (maps re-joined only when they changed)."""
        config_bytes = self._config()
        for name in self._dirty_maps:
            self._map_bytes[name] = writer.map_file(self._map_keys[name], self._map_lines[name])
            self._map_views.pop(name, None)  # copied again when a description asks
        self._dirty_maps = set()
        others = self._others()
        return dict(sorted({CONFIG_FILE: config_bytes, **others, **self._map_bytes}.items()))

    def description(self) -> Description:
        """What the files are written from, which the planner compares.

        The backends are the very objects kept here, so comparing unchanged
        routes costs an identity check; maps are copied again only when they
        changed.
        """
        self.files()  # the head may have moved with the checked-server count
        parts = self.parts
        backends = dict([parts[k][:2] for k in self._order])  # (name, backend)
        for spare in self._spares:
            backends[spare.name] = spare
        views = self._map_views
        maps = {
            name: views[name] if name in views else views.setdefault(name, dict(values))
            for name, values in sorted(self._map_values.items())
        }
        return Description(self._head, backends, maps, dict(sorted(self._others().items())))

    def snapshot(self) -> tuple[dict[str, bytes], Description]:
        """The file set and its description, for the driver."""
        return self.files(), self.description()

    def _others(self) -> dict[str, bytes]:
        """Every file but ``haproxy.cfg`` and the maps."""
        if self._crt_bytes is None:
            self._crt_bytes = "".join(sorted(self._crt.values())).encode()
        others: dict[str, bytes] = {CRT_LIST: self._crt_bytes}
        if not self.config.errorfile_503:
            others[ERROR_PAGE_503] = DEFAULT_503_PAGE
        for own in self._files.values():
            others.update(own)
        return others

    def _config(self) -> bytes:
        """``haproxy.cfg``, joined again only after a change (or a new fitted head)."""
        if self._config_bytes is None or self.fit.checked != self._checked:
            self._head, self.fit = fit_head(self.config, self._paths, self._checked)
            sections = "".join([self._texts[k] for k in self._order])
            body = (self._head + sections + self._spares_text).encode()
            self._config_bytes = identity.stamp(body)  # not in the head: see identity.py
        return self._config_bytes

    @property
    def backends(self) -> dict[RouteKey, str]:
        """The backend serving each rendered route (shared ones name the same backend)."""
        return {k: self._served[k] for k in sorted(self._served)}

    # ------------------------------------------------------------ internals
    def _serve(self, key: RouteKey, backend: str, bulk: bool = False) -> None:
        """Route ``key``'s map entries name ``backend``; its own, if so, joins the config."""
        parts = self.parts[key]
        own = parts.name
        self._served[key] = backend
        if backend == own:
            self._checked += parts.checked
            if bulk or (self._order and self._order[-1] < key):
                self._order.append(key)  # keys come sorted (bulk: sorted once at the end)
            else:
                bisect.insort(self._order, key)
            self._texts[key] = writer.backend_text(parts.backend)
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
        if parts.crt is not None:
            self._crt[key] = writer.crt_line(parts.crt)
            self._crt_bytes = None
        self._config_bytes = None

    def _unserve(self, key: RouteKey) -> None:
        parts = self.parts[key]
        if self._served.pop(key) == parts.name:
            self._checked -= parts.checked
            del self._order[bisect.bisect_left(self._order, key)]
            del self._texts[key]
        for map_name, map_key, _, _ in parts.entries:
            self._want(map_name, map_key, key, None)
        self._files.pop(key, None)
        if self._crt.pop(key, None) is not None:
            self._crt_bytes = None
        self._config_bytes = None

    def _remove(self, key: RouteKey) -> SectionKey | None:
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
            values = self._map_values[name] = {
                k: min(w.values())[1] if len(w) > 1 else next(iter(w.values()))[1]
                for k, w in by_key.items()
            }
            self._map_lines[name] = writer.map_lines(values)
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
        values, keys = self._map_values[name], self._map_keys[name]
        if not wanting:
            del self._wants[name][map_key]
            if values.pop(map_key, None) is not None:
                del self._map_lines[name][map_key]
                del keys[bisect.bisect_left(keys, map_key)]
        else:
            value = min(wanting.values())[1]
            if map_key not in values:
                bisect.insort(keys, map_key)
            values[map_key] = value
            self._map_lines[name][map_key] = writer.map_line(map_key, value)
        self._dirty_maps.add(name)
