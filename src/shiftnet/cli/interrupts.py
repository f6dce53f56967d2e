"""Ctrl-C once a command runs: ``KeyboardInterrupt``, and never lost.

Why not Python's own handler: it raises ``KeyboardInterrupt`` wherever the
main thread is when the signal is handled, and when that is a finalizer
(``__del__``) or a garbage-collector callback, Python prints "Exception
ignored" and goes on: the interrupt is gone. A command that then blocks
(``apply -f -`` reading a terminal or a pipe that stays open) would wait
forever for a Ctrl-C it already had. This handler also records that the
interrupt came, and :func:`raise_if_interrupted` raises it again before a
command blocks.
"""

from __future__ import annotations

import signal
from types import FrameType

_received = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    global _received
    _received = True
    raise KeyboardInterrupt


def install() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` from here on (and is remembered)."""
    signal.signal(signal.SIGINT, _interrupt)


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if a Ctrl-C came and was swallowed on its way."""
    if _received:
        raise KeyboardInterrupt
