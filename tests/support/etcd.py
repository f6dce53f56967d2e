"""Start a real etcd (Debian ``etcd-server``) on free loopback ports for a test, and stop it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import httpx

from tests.support.ports import free_port


class EtcdServer:
    def __init__(self) -> None:
        # tmpfs keeps fsync cheap, so a loaded CI machine does not time out etcd writes
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.dir = tempfile.mkdtemp(prefix="sn-etcd-", dir=shm)
        self.client_port = free_port()
        self.peer_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"etcd://127.0.0.1:{self.client_port}"

    def start(self) -> None:
        exe = shutil.which("etcd") or "/usr/bin/etcd"
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        self.proc = subprocess.Popen(
            [
                exe,
                "--name",
                "sn-test",
                "--data-dir",
                f"{self.dir}/data",
                "--listen-client-urls",
                client,
                "--advertise-client-urls",
                client,
                "--listen-peer-urls",
                peer,
                "--initial-advertise-peer-urls",
                peer,
                "--initial-cluster",
                f"sn-test={peer}",
                "--log-level",
                "error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(f"{self.dir}/etcd.log", "wb"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited early; see {self.dir}/etcd.log")
            try:
                if httpx.get(f"{client}/health", timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("etcd did not become healthy within 20 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def running_etcd() -> Iterator[EtcdServer]:
    srv = EtcdServer()
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
