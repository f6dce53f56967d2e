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

Pure: no I/O, no clocks.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping

from shiftnet.router.admission import RouteKey
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import escape, live
from shiftnet.router.haproxy import render as r
from shiftnet.router.model import L7Policy

log = logging.getLogger(__name__)

_Rank = tuple[int, int, str]


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
        self._order: list[RouteKey] = []  # keys of self.parts, sorted
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

    def update(self, policies: Mapping[RouteKey, L7Policy | None]) -> dict[RouteKey, str | None]:
        """Apply changed policies (None: removed); returns their backend names (None: none)."""
        out: dict[RouteKey, str | None] = {}
        bulk = not self.parts and len(policies) > 64  # start-up: maps built once at the end
        for key in sorted(policies):
            self._remove(key)
            policy = policies[key]
            if policy is None:
                out[key] = None
                continue
            try:
                parts = r._policy_parts(policy, self._defaults)
            except escape.UnsafeValue as err:
                self.skipped[key] = str(err)
                log.warning(
                    "route skipped in haproxy configuration route=%s/%s reason=%r",
                    policy.namespace, policy.name, str(err),
                )
                out[key] = None
                continue
            self._add(key, parts, bulk)
            out[key] = parts.backend
        if bulk:
            self._rebuild_maps()
        return out

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
        return {k: self.parts[k].backend for k in self._order}

    # ------------------------------------------------------------ internals
    def _add(self, key: RouteKey, parts: r._PolicyParts, bulk: bool = False) -> None:
        self.parts[key] = parts
        self._checked += parts.checked
        if self._order and self._order[-1] < key:
            self._order.append(key)  # keys come sorted: the usual case
        else:
            bisect.insort(self._order, key)
        self._sections[key] = parts.text[:-1]  # split_sections leaves the last newline out
        if bulk:
            wants = self._wants
            for map_name, map_key, value, rank in parts.entries:
                by_key = wants[map_name]
                wanting = by_key.get(map_key)
                if wanting is None:
                    by_key[map_key] = {key: (rank, value)}
                else:
                    wanting[key] = (rank, value)
        else:
            for map_name, map_key, value, rank in parts.entries:
                self._want(map_name, map_key, key, (rank, value))
        if parts.files:
            self._files[key] = parts.files
        if parts.crt_line is not None:
            self._crt[key] = parts.crt_line
            self._crt_bytes = None
        self._config_bytes = None

    def _remove(self, key: RouteKey) -> None:
        self.skipped.pop(key, None)
        parts = self.parts.pop(key, None)
        if parts is None:
            return
        self._checked -= parts.checked
        del self._order[bisect.bisect_left(self._order, key)]
        del self._sections[key]
        for map_name, map_key, _, _ in parts.entries:
            self._want(map_name, map_key, key, None)
        self._files.pop(key, None)
        if self._crt.pop(key, None) is not None:
            self._crt_bytes = None
        self._config_bytes = None

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

