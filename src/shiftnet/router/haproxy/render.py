"""Render the L7 model into HAProxy's file set: ``haproxy.cfg``, map files, certificates.

Pure and deterministic: ``render_haproxy(model, config, paths)`` returns
``{relative file name: bytes}`` and equal inputs give byte-identical files.
It is an :class:`~shiftnet.router.haproxy.assembly.Assembly` fed every route
at once: each route is described (``build.py``), the description written
(``writer.py``). The driver writes the files (``files.write_file_set``),
checks them with ``haproxy -c`` and reloads, or applies what changed through
the runtime API (see ``docs/router.md``).

A route whose values cannot be written is left out (and reported in
:attr:`RenderResult.skipped`), never the whole configuration.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field

from shiftnet.router.admission import RouteKey
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy.build import home_slot, lookup_key, slot_count, slot_servers
from shiftnet.router.haproxy.description import Description
from shiftnet.router.haproxy.limits import MaxconnFit
from shiftnet.router.haproxy.names import (
    CONFIG_FILE,
    HTTP_MAPS,
    HTTP_PREFIX_MAP,
    HTTP_WILDCARD_PREFIX_MAP,
    REDIRECT_BACKEND,
    SNI_PASSTHROUGH_MAP,
    SNI_PASSTHROUGH_WILDCARD_MAP,
    SNI_TERMINATE_MAP,
    TLS_PREFIX_MAP,
    TLS_WILDCARD_PREFIX_MAP,
)
from shiftnet.router.haproxy.writer import RenderPaths
from shiftnet.router.model import L7Model

__all__ = [
    "CONFIG_FILE",
    "HTTP_MAPS",
    "HTTP_PREFIX_MAP",
    "HTTP_WILDCARD_PREFIX_MAP",
    "REDIRECT_BACKEND",
    "SNI_PASSTHROUGH_MAP",
    "SNI_PASSTHROUGH_WILDCARD_MAP",
    "SNI_TERMINATE_MAP",
    "TLS_PREFIX_MAP",
    "TLS_WILDCARD_PREFIX_MAP",
    "RenderPaths",
    "RenderResult",
    "gc_paused",
    "home_slot",
    "lookup_key",
    "render",
    "render_haproxy",
    "slot_count",
    "slot_servers",
]


@dataclass
class RenderResult:
    """The file set, which backend serves each route, the routes left out (with why),
    and the assembly that wrote them (its description on demand)."""

    files: dict[str, bytes]
    assembly: Assembly
    backends: dict[RouteKey, str] = field(default_factory=dict)
    skipped: dict[RouteKey, str] = field(default_factory=dict)
    fit: MaxconnFit | None = None  # maxconn as rendered, fitted to the checked servers

    @property
    def description(self) -> Description:
        """What the files are written from (made when asked: most callers want files)."""
        return self.assembly.description()


def render(model: L7Model, config: RouterConfig, paths: RenderPaths) -> RenderResult:
    """Render everything; routes that cannot be written safely are skipped and reported."""
    with gc_paused():
        assembly = Assembly(config, paths)
        assembly.update({policy.key: policy for policy in model.policies})
        return RenderResult(
            files=assembly.files(),
            assembly=assembly,
            backends=assembly.backends,
            skipped=dict(assembly.skipped),
            fit=assembly.fit,
        )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic collector around a burst of short-lived, acyclic objects.

    Rendering 10,000 routes allocates a few hundred thousand strings and
    tuples; each generation-2 pass would rescan the router's whole heap (the
    informer caches included), which roughly doubled render time. Nothing
    here creates reference cycles, so reference counting frees it all anyway.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def render_haproxy(model: L7Model, config: RouterConfig, paths: RenderPaths) -> dict[str, bytes]:
    """The complete file set ``{relative name: bytes}`` for one HAProxy configuration."""
    return render(model, config, paths).files
