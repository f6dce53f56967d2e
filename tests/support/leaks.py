"""Measure a process's open descriptors and RSS from /proc, before and after a load.

A listener that leaks a descriptor per connection looks healthy for the first
few thousand connections and then takes the whole process down, so every
listener shiftnet owns gets a test that runs thousands of short connections
and then checks that the server process is back where it started.

Usage (the measured process is the *server*, by pid, not the test)::

    probe = LeakProbe(pid, name="shiftnet proxy")   # after a warm-up round
    run_many_connections()
    probe.assert_settled()      # or: await probe.settled() when the server shares the loop

Descriptors must come back to the baseline within ``fd_slack`` (a few stay
open legitimately: a lazily opened log file, an epoll fd), after a settle
period that lets the server notice closed peers. RSS may grow by at most
``rss_growth_kib``: allocators keep freed memory, so the bound is a ceiling
well below what a per-connection leak of thousands of connections would cost,
not zero; ``None`` skips it (a server sharing the test's process shares its
RSS with the test's own buffers). Take the baseline after a warm-up round so first-use allocations
(imports, caches, buffers) are not counted as growth.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_FD_SLACK = 4
DEFAULT_RSS_GROWTH_KIB = 16 * 1024
DEFAULT_SETTLE = 10.0


def _kind(target: str) -> str:
    """What a descriptor is, without its unique part: ``socket``, ``pipe``, a path."""
    if target.startswith(("socket:", "pipe:")):
        return target.split(":", 1)[0]
    if target.startswith("anon_inode:"):
        return target
    return "file " + target


@dataclass(frozen=True)
class Usage:
    """One process's open descriptors (by kind) and resident memory at one moment."""

    pid: int
    fds: Counter[str]
    rss_kib: int

    @property
    def fd_count(self) -> int:
        return sum(self.fds.values())


def usage(pid: int) -> Usage:
    """Read ``/proc/<pid>/fd`` and ``VmRSS``; raises ``ProcessLookupError`` if it is gone."""
    base = Path(f"/proc/{pid}")
    kinds: Counter[str] = Counter()
    try:
        names = os.listdir(base / "fd")
    except FileNotFoundError:
        raise ProcessLookupError(f"process {pid} is gone") from None
    for name in names:
        try:
            kinds[_kind(os.readlink(base / "fd" / name))] += 1
        except OSError:
            continue  # closed between listdir and readlink
    rss = 0
    try:
        for line in (base / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
                break
    except OSError:
        raise ProcessLookupError(f"process {pid} is gone") from None
    return Usage(pid, kinds, rss)


def _diff(before: Counter[str], after: Counter[str]) -> str:
    grown = after.copy()
    grown.subtract(before)
    parts = [f"{kind} {n:+d}" for kind, n in grown.most_common() if n]
    return ", ".join(parts[:8]) or "none by kind"


class _Settling:
    """The wait loops shared by one probe and a group of probes."""

    def problem(self) -> str | None:
        raise NotImplementedError

    def assert_settled(self, settle: float = DEFAULT_SETTLE) -> None:
        """Wait (blocking) up to ``settle`` seconds for the process(es) to return to baseline."""
        deadline = time.monotonic() + settle
        while (problem := self.problem()) is not None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{problem} (after {settle:g} s to settle)")
            time.sleep(0.1)

    async def settled(self, settle: float = DEFAULT_SETTLE) -> None:
        """:meth:`assert_settled` for a server that runs in the test's own event loop."""
        deadline = time.monotonic() + settle
        while (problem := self.problem()) is not None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{problem} (after {settle:g} s to settle)")
            await asyncio.sleep(0.1)


class LeakProbe(_Settling):
    """The baseline of one process; :meth:`problem` compares the present with it."""

    def __init__(
        self,
        pid: int,
        *,
        name: str = "",
        fd_slack: int = DEFAULT_FD_SLACK,
        rss_growth_kib: int | None = DEFAULT_RSS_GROWTH_KIB,
    ) -> None:
        self.pid = pid
        self.name = name or f"pid {pid}"
        self.fd_slack = fd_slack
        self.rss_growth_kib = rss_growth_kib
        self.before = usage(pid)
        self.last = self.before

    def problem(self) -> str | None:
        """A sentence saying what grew beyond its bound now, or ``None``."""
        try:
            self.last = now = usage(self.pid)
        except ProcessLookupError:  # e.g. an HAProxy worker replaced by a reload
            raise AssertionError(f"{self.name} (pid {self.pid}) exited while measured") from None
        faults = []
        if now.fd_count > self.before.fd_count + self.fd_slack:
            faults.append(
                f"open descriptors {self.before.fd_count} -> {now.fd_count} "
                f"(allowed +{self.fd_slack}; {_diff(self.before.fds, now.fds)})"
            )
        growth = self.rss_growth_kib
        if growth is not None and now.rss_kib > self.before.rss_kib + growth:
            faults.append(f"RSS {self.before.rss_kib} -> {now.rss_kib} KiB (allowed +{growth} KiB)")
        return f"{self.name} leaks: " + "; ".join(faults) if faults else None

    def summary(self) -> str:
        """``name fds a->b rss x->y KiB``, for a test's report line."""
        return (
            f"{self.name} fds {self.before.fd_count}->{self.last.fd_count} "
            f"rss {self.before.rss_kib}->{self.last.rss_kib} KiB"
        )


class LeakProbes(_Settling):
    """Several processes measured together (e.g. the router and its HAProxy)."""

    def __init__(self, probes: Iterable[LeakProbe]) -> None:
        self.probes = list(probes)

    def problem(self) -> str | None:
        found = [p for p in (probe.problem() for probe in self.probes) if p]
        return "; ".join(found) if found else None

    def summary(self) -> str:
        return "; ".join(p.summary() for p in self.probes)
