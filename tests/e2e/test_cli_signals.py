"""Ctrl-C and SIGTERM end shiftnet cleanly: no traceback, cleanup runs, shell-style exit codes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET, Shiftnet

LONG_RUNNING = """
import asyncio, sys
from shiftnet.cli.runtime import run_async

async def main():
    print("ready", flush=True)
    try:
        await asyncio.sleep(3600)
    finally:
        await asyncio.sleep(0.05)  # shutdown work may await
        print("cleaned up", flush=True)
    return 0

sys.exit(run_async(main))
"""


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_run_async_cancels_main_and_exits_like_a_shell(sig: signal.Signals, code: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", LONG_RUNNING],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code
    assert out.strip() == "cleaned up"
    assert "Traceback" not in err


def test_ctrl_c_while_reading_stdin_exits_130_without_traceback(tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", tmp_path / "home")
    proc = subprocess.Popen(
        [SHIFTNET, "--store", sn.store, "apply", "-f", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**sn.env(), "PYTHONFAULTHANDLER": "1"},
        # a runner started in the background (`cmd &`, nohup) ignores SIGINT and its
        # children inherit that; the user's shell gives a command the default action
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write("apiVersion: v1\n")
        proc.stdin.flush()
        # wait until the command is blocked reading the rest of its input
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _reading_stdin(proc.pid):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # stdin stays open, as a terminal's does: closing it now would race the signal
        # with an end of input (the half document then fails to parse: exit 1)
        assert proc.stdout is not None and proc.stderr is not None
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler: where every thread waits
            proc.wait(timeout=10)
            raise AssertionError(f"no exit after Ctrl-C:\n{proc.stderr.read()}") from None
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert out == ""
    assert "Traceback" not in err


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _reading_stdin(pid: int) -> bool:
    """True once the process sleeps in read(0, ...): /proc/PID/syscall names the call
    (0 is read on x86-64) and its first argument (the descriptor)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False
    return call[:2] == ["0", "0x0"] and "pipe" in wchan
