"""Run the real ``shiftnet`` console script as a user would, against a store of the test's own."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SHIFTNET = str(Path(sys.executable).with_name("shiftnet"))


@dataclass
class Shiftnet:
    """``shiftnet`` bound to one store URL and one state directory."""

    store: str
    home: Path

    def env(self) -> dict[str, str]:
        """The environment of a user whose shiftnet state is this test's (never ~/.shiftnet)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
        env["SHIFTNET_HOME"] = str(self.home)
        return env

    def run(
        self, *args: str, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SHIFTNET, "--store", self.store, *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str, input: str | None = None) -> str:
        """Run, insist on exit 0, return stdout."""
        res = self.run(*args, input=input)
        assert res.returncode == 0, f"shiftnet {' '.join(args)} failed: {res.stderr}"
        return res.stdout

    def revision(self) -> int:
        """The store's revision: unchanged means nothing was written."""
        from shiftnet.store import open_store

        async def rev() -> int:
            store = open_store(self.store)
            try:
                return await store.revision()
            finally:
                await store.close()

        return asyncio.run(rev())


def one_error_line(stderr: str) -> str:
    """The single ``error: ...`` sentence a failing command must print, nothing else."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in stderr
    return lines[0]
