"""A real ``shiftnet apiserver`` process on a free loopback port, and the real kubectl."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.ports import free_port

SHIFTNET = str(Path(sys.executable).with_name("shiftnet"))
KUBECTL = "/usr/bin/kubectl"


@dataclass
class APIServerProcess:
    """``shiftnet apiserver`` over a SQLite store of the test's own."""

    home: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[str] | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def store(self) -> str:
        return f"sqlite://{self.home}/state.db"

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIFTNET_", "KUBE"))}
        env["SHIFTNET_HOME"] = str(self.home)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["HOME"] = str(self.home.parent)  # kubectl's discovery cache stays in the test
        return env

    def start(self, timeout: float = 30.0) -> None:
        self.proc = subprocess.Popen(
            [
                SHIFTNET,
                "--store",
                self.store,
                "apiserver",
                "--api-listen",
                f"127.0.0.1:{self.port}",
                *self.extra_args,
            ],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("export KUBECONFIG="):
                return
        self.stop()
        raise AssertionError("apiserver did not start:\n" + "".join(seen))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    @property
    def token(self) -> str:
        return (self.home / "apiserver" / "admin.token").read_text().strip()

    @property
    def ca(self) -> str:
        return str(self.home / "apiserver" / "ca.crt")

    def kubectl(
        self, *args: str, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str, input: str | None = None) -> str:
        res = self.kubectl(*args, input=input)
        assert res.returncode == 0, f"kubectl {' '.join(args)} failed: {res.stderr}"
        return res.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json"))
