"""Processes the benchmark starts: tracked by pid, stopped by pid, always (even on Ctrl-C).

Why a registry: the benchmark starts nginx, HAProxy (directly for the
baseline, and through ``shiftnet router``), and wrk; any of them left behind
would skew the next engineer's numbers on this shared machine. Every start
registers the pid; ``stop_all`` ends them in reverse order, children included.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

_started: list[int] = []


def register(pid: int) -> None:
    _started.append(pid)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def stop(pid: int, timeout: float = 5.0) -> None:
    """SIGTERM the process, then SIGKILL it and any children it leaves."""
    kids = children(pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    for p in [pid, *kids]:
        if alive(p):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    with contextlib.suppress(ValueError):
        _started.remove(pid)


def stop_all() -> None:
    for pid in reversed(list(_started)):
        stop(pid, timeout=3.0)


def spawn(cmd: list[str], log: Path, **kw: object) -> subprocess.Popen:
    fh = open(log, "ab")  # noqa: SIM115 - kept open for the child's lifetime
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, **kw)  # type: ignore[call-overload]
    register(proc.pid)
    return proc


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


_ports_given: set[int] = set()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A free loopback port below the kernel's ephemeral range, never the same one twice.

    Why not bind(0): the kernel hands out ports from the ephemeral range, where
    a port picked now may be taken by some outgoing connection before HAProxy
    binds it a minute later (a 10,000-route start takes that long), and two
    calls in a row may return the same port.
    """
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20000, 32000)
        if port in _ports_given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_given.add(port)
        return port
    raise RuntimeError("no free port in 20000-32000")


def haproxy_pids(needle: str) -> list[int]:
    """Every haproxy process whose command line mentions ``needle`` (a work dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        mine = cmd.startswith(b"/usr/sbin/haproxy") and needle.encode() in cmd
        if mine and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def haproxy_family(needle: str) -> list[int]:
    """Masters mentioning ``needle`` and their workers."""
    out: set[int] = set()
    for m in haproxy_pids(needle):
        out.add(m)
        out.update(p for p in children(m) if alive(p))
    return sorted(out)


def kill_haproxy(needle: str) -> None:
    for pid in haproxy_family(needle):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
