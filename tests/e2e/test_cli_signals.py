"""Ctrl-C and SIGTERM end shiftnet cleanly: no traceback, cleanup runs, shell-style exit codes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET, Shiftnet

import shiftnet.entry_point

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


SHIFTNET_CODE = Path(shiftnet.entry_point.__file__).resolve().parent


def _frames_in_shiftnet(stderr: str) -> list[str]:
    """The traceback lines naming a file of the shiftnet package."""
    return [ln for ln in stderr.splitlines() if ln.strip().startswith(f'File "{SHIFTNET_CODE}/')]


def test_ctrl_c_while_the_cli_imports_exits_130_without_traceback(tmp_path: Path) -> None:
    """Ctrl-C at every moment of start-up: quiet, 130. ``apply -f -`` reads stdin
    (kept open) once started, so each Ctrl-C interrupts it wherever it has got to."""
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", tmp_path / "home")
    outcomes: dict[str, list[int]] = {
        "in shiftnet": [],
        "in python's own start-up": [],
        "swallowed by python's own start-up": [],
    }
    for delay_ms in [*range(0, 61, 3), *range(0, 61, 3)]:
        proc = subprocess.Popen(
            [SHIFTNET, "--store", sn.store, "apply", "-f", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=sn.env(),
            preexec_fn=_default_sigint,
        )
        try:
            time.sleep(delay_ms / 1000)
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=10)
                again = False
            except subprocess.TimeoutExpired:
                # Still reading stdin: the Ctrl-C was swallowed. A user presses it again.
                proc.send_signal(signal.SIGINT)
                _, err = proc.communicate(timeout=30)
                again = True
            code = proc.returncode
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        if again:
            # Only CPython swallows an interrupt where no handler of ours can see it:
            # in its own start-up (checking argv[0] as an import path) or in a
            # finalizer of its import machinery ("Exception ignored in"), before the
            # console script's handler exists. Every other Ctrl-C ends the command.
            assert "KeyboardInterrupt" in err and not _frames_in_shiftnet(err), (delay_ms, err)
            assert "Failed checking if argv[0]" in err or "Exception ignored in" in err, err
            outcomes["swallowed by python's own start-up"].append(delay_ms)
            continue
        if "KeyboardInterrupt" in err and not _frames_in_shiftnet(err):
            # Before the console script's first line: Python's own start-up
            # (site, the generated script's `import re`), out of shiftnet's reach.
            outcomes["in python's own start-up"].append(delay_ms)
            continue
        outcomes["in shiftnet"].append(delay_ms)
        assert "Traceback" not in err, f"Ctrl-C after {delay_ms} ms:\n{err}"
        # 130 from shiftnet; killed by SIGINT when it came before Python's handler existed
        assert code in (130, -signal.SIGINT), (delay_ms, code, err)
        assert err.strip() == "", (delay_ms, err)
    # most Ctrl-Cs land while shiftnet's own modules import or run
    assert len(outcomes["in shiftnet"]) >= 30, outcomes
