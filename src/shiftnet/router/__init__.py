"""The router: Routes served through HAProxy (admission -> model -> haproxy driver).

``Router(store, config)`` is importable from here; the import is lazy so the
pure parts (config, admission, model, render) load without the I/O half.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Router"]


def __getattr__(name: str) -> Any:
    if name == "Router":
        from shiftnet.router.router import Router

        return Router
    raise AttributeError(name)
