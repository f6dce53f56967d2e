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
        self.proc: subprocess.Popen | None = None

    def check(self) -> float:
        t0 = time.monotonic()
        out = subprocess.run([HAPROXY, "-c", "-q", "-f", "haproxy.cfg"], cwd=self.conf_dir,
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"haproxy -c failed: {(out.stdout + out.stderr)[-800:]}")
        return time.monotonic() - t0

    def start(self, port: int, timeout: float = 120.0) -> float:
        """Start and wait until the port answers; returns the seconds it took."""
        import socket

        t0 = time.monotonic()
        self.proc = procs.spawn([HAPROXY, "-W", "-db", "-f", "haproxy.cfg"],
                                self.conf_dir / "haproxy.log", cwd=self.conf_dir)
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("haproxy exited: "
                                   + (self.conf_dir / "haproxy.log").read_text()[-800:])
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return time.monotonic() - t0
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("haproxy did not listen in time")

    def rss_kb(self) -> int:
        if self.proc is None:
            return 0
        return sum(procs.rss_kb(p) for p in [self.proc.pid, *procs.children(self.proc.pid)])

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop(self.proc.pid)
            self.proc = None
