"""Run a plain HAProxy on a hand-rendered configuration (the OpenShift-style baseline)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from routerbench import procs

HAPROXY = "/usr/sbin/haproxy"


class PlainHAProxy:
    """HAProxy in master-worker mode in the foreground, started and stopped by pid."""

    def __init__(self, conf_dir: Path) -> None:
        self.conf_dir = conf_dir
        self.pid: int | None = None

    def check(self) -> float:
        t0 = time.monotonic()
        out = subprocess.run(
            [HAPROXY, "-c", "-q", "-f", "haproxy.cfg"],
            cwd=self.conf_dir,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if out.returncode != 0:
            raise RuntimeError(f"haproxy -c failed: {(out.stdout + out.stderr)[-800:]}")
        return time.monotonic() - t0

    def start(self, port: int, timeout: float = 120.0) -> float:
        """Start as the router starts its HAProxy (master-worker, daemonized into its own
        session, so the scheduler treats both alike); wait until the port answers."""
        import socket

        t0 = time.monotonic()
        pid_file = self.conf_dir / "haproxy.pid"
        out = subprocess.run(
            [
                HAPROXY,
                "-W",
                "-D",
                "-S",
                f"{self.conf_dir}/master.sock,mode,600",
                "-p",
                str(pid_file),
                "-f",
                "haproxy.cfg",
            ],
            cwd=self.conf_dir,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if out.returncode != 0 or not pid_file.exists():
            procs.kill_haproxy(str(self.conf_dir))
            raise RuntimeError(f"haproxy did not start: {(out.stdout + out.stderr)[-800:]}")
        self.pid = int(pid_file.read_text().split()[0])
        procs.register(self.pid)
        while time.monotonic() - t0 < timeout:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return time.monotonic() - t0
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("haproxy did not listen in time")

    def rss_kb(self) -> int:
        return sum(procs.rss_kb(p) for p in procs.haproxy_family(str(self.conf_dir)))

    def stop(self) -> None:
        if self.pid is not None:
            procs.stop(self.pid)
            self.pid = None
        procs.kill_haproxy(str(self.conf_dir))
