"""A started or adopted process in its own process group, awaitable without polling.

Waiting uses a pidfd (Linux >= 5.3), which works the same for our own
children and for processes adopted after an agent restart (not our
children, so ``waitpid`` cannot be used on them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from shiftnet.sdn.pidfiles import process_start_time

UNKNOWN_EXIT = 255  # an adopted process's exit status cannot be read


class PodProcess:
    """One container process; ``pid`` is also its process group id."""

    def __init__(self, pid: int, start_time: int, popen: subprocess.Popen[bytes] | None) -> None:
        self.pid = pid
        self.start_time = start_time
        self._popen = popen
        self.exit_code: int | None = None
        self._waiter: asyncio.Task[int] | None = None

    @property
    def adopted(self) -> bool:
        """True for a process an earlier agent started (its exit status is unknowable)."""
        return self._popen is None

    @classmethod
    def spawn(cls, argv: list[str], env: Mapping[str, str], cwd: str, log_path: Path) -> PodProcess:
        """Start ``argv`` in a new session; stdout and stderr append to ``log_path``.

        Raises OSError when the command cannot be started.
        """
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(
                argv,
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        start = process_start_time(popen.pid)
        return cls(popen.pid, start if start is not None else -1, popen)

    @classmethod
    def adopt(cls, pid: int, start_time: int) -> PodProcess | None:
        """Take over a process started by an earlier agent, if it is still that process."""
        if process_start_time(pid) != start_time:
            return None
        return cls(pid, start_time, None)

    async def wait(self) -> int:
        """Exit code once the process ends (128+signal when killed; UNKNOWN_EXIT if adopted)."""
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_task(self._wait())
        return await asyncio.shield(self._waiter)

    async def _wait(self) -> int:
        try:
            fd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            fd = -1
        if fd >= 0:
            loop = asyncio.get_running_loop()
            done = loop.create_future()

            def exited() -> None:
                if not done.done():
                    done.set_result(None)

            loop.add_reader(fd, exited)
            try:
                if self._popen is None and process_start_time(self.pid) != self.start_time:
                    done.set_result(None)  # gone (or replaced) before the pidfd was opened
                await done
            finally:
                loop.remove_reader(fd)
                os.close(fd)
        if self._popen is not None:
            code = self._popen.wait()
            self.exit_code = 128 - code if code < 0 else code
        else:
            self.exit_code = UNKNOWN_EXIT
        return self.exit_code

    def signal_group(self, sig: int) -> None:
        """Signal the whole process group (the command and anything it started)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def terminate(self, grace: float) -> int:
        """SIGTERM the group, SIGKILL it after ``grace`` seconds, and reap."""
        self.signal_group(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.wait(), max(grace, 0.0))
        except TimeoutError:
            self.signal_group(signal.SIGKILL)
            code = await self.wait()
        self.signal_group(signal.SIGKILL)  # leftovers that ignored SIGTERM
        return code
