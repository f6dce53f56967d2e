"""Stop what a test's ``shiftnet`` processes started, by pid, and fail a test that leaves
a HAProxy of its own state running.

Why: ``shiftnet up`` and ``shiftnet router`` start HAProxy in its own session
(it outlives a crashed router, to be adopted), and pods in process groups of
their own. Killing the ``shiftnet`` process group alone leaves them running,
holding ports and socket directories. Everything here finds processes by the
state directory their command line names, never by a broad process name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from shiftnet.sdn.pidfiles import read_record
from tests.support.router import haproxy_pids_using, kill_haproxy

STOP_WAIT = 30.0  # seconds a clean stop (Ctrl-C) may take before the group is killed


def pod_pids(state: Path) -> list[int]:
    """The pod processes ``shiftnet up`` recorded under ``state``."""
    pids = []
    for f in state.glob("nodes/*/pods/*/*.pid"):
        rec = read_record(f)
        if rec is not None:
            pids.append(rec.pid)
    return pids


def router_work_dirs(state: Path) -> list[Path]:
    """The routers' work dirs (``<state>/router-<name>``), running or not."""
    return sorted(p for p in state.glob("router-*") if p.is_dir())


def stop_haproxy_of(root: Path) -> None:
    """Kill, by pid, every HAProxy whose command line names ``root``, with its socket dirs."""
    for work_dir in router_work_dirs(root):
        kill_haproxy(work_dir)
    kill_haproxy(root)


def stop_up(proc: subprocess.Popen[str], state: Path) -> None:
    """End a ``shiftnet up`` (or ``router``) started with ``start_new_session=True`` so that
    nothing of it is left: Ctrl-C as a user would (its clean shutdown stops HAProxy and
    pods), SIGKILL of its process group after ``STOP_WAIT``, then whatever the killed
    process could not stop: its pods and its HAProxy, by pid."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for pid in pod_pids(state):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    stop_haproxy_of(state)


def check_no_haproxy_left(root: Path) -> None:
    """Fail when a HAProxy started on a directory under ``root`` still runs; stop it first,
    so one leaking test does not hold ports for the next."""
    left = sorted(haproxy_pids_using(root))
    if not left:
        return
    commands = []
    for pid in left:
        with contextlib.suppress(OSError):
            commands.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "))
    stop_haproxy_of(root)
    raise AssertionError(
        f"the test left HAProxy running (pids {left}) on its state under {root}: "
        "stop what it started (tests.support.leftovers.stop_up); "
        f"command lines: {[c.decode(errors='replace').strip() for c in commands]}"
    )
