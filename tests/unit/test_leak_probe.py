"""The leak helper itself: it sees descriptors a process opened and names their kind."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys

import pytest
from tests.support.leaks import LeakProbe, LeakProbes


def test_sees_opened_descriptors_and_their_return() -> None:
    probe = LeakProbe(os.getpid(), name="this test", fd_slack=1, rss_growth_kib=None)
    files = [open(os.devnull) for _ in range(5)]  # noqa: SIM115
    try:
        problem = probe.problem()
        assert problem is not None
        assert "this test leaks: open descriptors" in problem
        assert f"file {os.devnull} +5" in problem
        with pytest.raises(AssertionError, match=r"after 0\.2 s to settle"):
            probe.assert_settled(0.2)
    finally:
        for f in files:
            f.close()
    probe.assert_settled(1)


def test_rss_growth_beyond_the_bound_is_reported() -> None:
    probe = LeakProbe(os.getpid(), name="this test", rss_growth_kib=1024)
    # fresh pages, each written: resident whatever memory the process freed earlier
    block = mmap.mmap(-1, 8 * 1024 * 1024)
    try:
        for offset in range(0, len(block), mmap.PAGESIZE):
            block[offset] = 1
        problem = probe.problem()
        assert problem is not None and "RSS" in problem and "allowed +1024 KiB" in problem
    finally:
        block.close()


def test_a_process_that_exits_is_a_clear_failure() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        probes = LeakProbes([LeakProbe(child.pid, name="child")])
    finally:
        child.kill()
        child.wait()
    with pytest.raises(AssertionError, match=rf"child \(pid {child.pid}\) exited while measured"):
        probes.assert_settled(1)
