"""``shiftnet logs router[/NAME] [-f] [--tail N]``: a router's access log.

Why here and not in the store: the router writes one line per request to
``<state dir>/router-<name>/logs/access.log`` (``router/accesslog.py``);
this reads that file, and its rotated predecessor first, on the same
machine. ``-f`` follows the file across rotations until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from pathlib import Path
from typing import BinaryIO

from shiftnet.api.names import hostname_errors
from shiftnet.errors import InvalidInput
from shiftnet.router.accesslog import ROTATED_SUFFIX, log_path

FOLLOW_POLL = 0.2
ROUTER_WORD = "router"


def router_name(target: str, namespace: str | None) -> str | None:
    """The router a ``logs`` argument names (``router`` or ``router/NAME``), or None for a pod.

    With ``-n`` the argument is always a pod (so a pod named ``router`` stays reachable).
    """
    if namespace is not None:
        return None
    if target == ROUTER_WORD:
        return ROUTER_WORD
    if not target.startswith(ROUTER_WORD + "/"):
        return None
    name = target.split("/", 1)[1]
    if hostname_errors(name) or "." in name:
        raise InvalidInput(f'router name "{name}" is not a lowercase DNS label')
    return name


def access_log_files(state_dir: Path, name: str) -> tuple[Path, Path]:
    """(rotated, current) access log files of router ``name``; InvalidInput when there is none."""
    current = log_path(state_dir / f"router-{name}")
    if not current.exists():
        raise InvalidInput(
            f'router "{name}" has no access log in {current.parent}: it does not run from this'
            " state directory (SHIFTNET_HOME), or it sends its log to ROUTER_SYSLOG_ADDRESS"
        )
    return current.with_name(current.name + ROTATED_SUFFIX), current


def _tail(paths: list[Path], count: int) -> bytes:
    if count == 0:
        return b""
    keep: deque[bytes] = deque(maxlen=count if count > 0 else None)
    for path in paths:
        try:
            with open(path, "rb") as f:
                keep.extend(f)
        except FileNotFoundError:
            continue
    return b"".join(keep)


async def _follow(current: Path, f: BinaryIO, out: BinaryIO) -> None:
    inode = os.fstat(f.fileno()).st_ino
    while True:
        chunk = f.read()
        if chunk:
            out.write(chunk)
            out.flush()
            continue
        try:
            st = current.stat()
        except FileNotFoundError:
            st = None
        if st is not None and st.st_ino != inode:
            f.close()  # rotated: what is left of the old file was read above
            rotated = current.with_name(current.name + ROTATED_SUFFIX)
            try:
                if rotated.stat().st_ino != inode:  # rotated twice since the last look
                    out.write(rotated.read_bytes())
            except FileNotFoundError:
                pass
            f = open(current, "rb")  # noqa: SIM115 - kept open while following
            inode = os.fstat(f.fileno()).st_ino
            continue
        await asyncio.sleep(FOLLOW_POLL)


async def print_router_log(
    state_dir: Path, name: str, tail: int, follow: bool, out: BinaryIO
) -> int:
    rotated, current = access_log_files(state_dir, name)
    f = open(current, "rb")  # noqa: SIM115 - closed below, or handed to _follow
    try:
        out.write(_tail([rotated, current], tail))
        out.flush()
        f.seek(0, os.SEEK_END)
        if follow:
            await _follow(current, f, out)
    finally:
        f.close()
    return 0
