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
from shiftnet.router.haproxy import escape
from shiftnet.router.haproxy import render as r
from shiftnet.router.model import L7Policy

log = logging.getLogger(__name__)

_Rank = tuple[int, int, str]


class Assembly:
    """Per-route rendered parts and the file set they make together."""

    def __init__(self, config: RouterConfig, paths: r.RenderPaths, *, memo: bool = False) -> None:
        self.config = config
        self._defaults = r._BackendDefaults.of(config)
        self._memo = memo  # one-shot full renders share the module memo; a live one needs none
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
        self._map_bytes: dict[str, bytes] = {}
        self._dirty_maps: set[str] = set(r.ALL_MAPS)
        self._files: dict[RouteKey, tuple[tuple[str, bytes], ...]] = {}
        self._crt: dict[RouteKey, str] = {}
        self._config_bytes: bytes | None = None
        self._crt_bytes: bytes | None = None

    def update(self, policies: Mapping[RouteKey, L7Policy | None]) -> dict[RouteKey, str | None]:
        """Apply changed policies (None: removed); returns their backend names (None: none)."""
        out: dict[RouteKey, str | None] = {}
        for key in sorted(policies):
            self._remove(key)
            policy = policies[key]
            if policy is None:
                out[key] = None
                continue
            try:
                parts = self._parts(policy)
            except escape.UnsafeValue as err:
                self.skipped[key] = str(err)
                log.warning(
                    "route skipped in haproxy configuration route=%s/%s reason=%r",
                    policy.namespace, policy.name, str(err),
                )
                out[key] = None
                continue
            self._add(key, parts)
            out[key] = parts.backend
        return out

    def files(self) -> dict[str, bytes]:
        """The whole file set, sorted by name (maps re-joined only when they changed)."""
        if self._config_bytes is None or self.fit.checked != self._checked:
            self._head, self.fit = r.fit_head(self.config, self._paths, self._checked)
            sections = "".join(self.parts[k].text for k in self._order)
            self._config_bytes = (self._head + sections + self._spares).encode()
        if self._crt_bytes is None:
            self._crt_bytes = "".join(sorted(self._crt.values())).encode()
        for name in self._dirty_maps:
            self._map_bytes[name] = _join_map(self._wants[name])
        self._dirty_maps = set()
        files: dict[str, bytes] = {r.CONFIG_FILE: self._config_bytes, r.CRT_LIST: self._crt_bytes}
        if not self.config.errorfile_503:
            files[r.ERROR_PAGE_503] = r.DEFAULT_503_PAGE
        for own in self._files.values():
            files.update(own)
        files.update(self._map_bytes)
        return dict(sorted(files.items()))

    @property
    def backends(self) -> dict[RouteKey, str]:
        return {k: self.parts[k].backend for k in self._order}

    # ------------------------------------------------------------ internals
    def _parts(self, policy: L7Policy) -> r._PolicyParts:
        if not self._memo:
            return r._policy_parts(policy, self._defaults)
        memo_key = (policy, self._defaults)
        return r._PARTS.get(memo_key) or r._PARTS.put(
            memo_key, r._policy_parts(policy, self._defaults)
        )

    def _add(self, key: RouteKey, parts: r._PolicyParts) -> None:
        self.parts[key] = parts
        self._checked += parts.checked
        bisect.insort(self._order, key)
        for map_name, map_key, value, rank in parts.entries:
            self._wants[map_name].setdefault(map_key, {})[key] = (rank, value)
            self._dirty_maps.add(map_name)
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
        for map_name, map_key, _, _ in parts.entries:
            wanting = self._wants[map_name][map_key]
            del wanting[key]
            if not wanting:
                del self._wants[map_name][map_key]
            self._dirty_maps.add(map_name)
        self._files.pop(key, None)
        if self._crt.pop(key, None) is not None:
            self._crt_bytes = None
        self._config_bytes = None


def _join_map(wants: dict[str, dict[RouteKey, tuple[_Rank, str]]]) -> bytes:
    """``key value`` lines, sorted by key; on a shared key the best-ranked route wins."""
    lines = []
    for key in sorted(wants):
        contenders = wants[key]
        value = min(contenders.values())[1] if len(contenders) > 1 else next(
            iter(contenders.values()))[1]
        lines.append(f"{key} {value}\n")
    return "".join(lines).encode()
