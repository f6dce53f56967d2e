"""A small routed topology of network namespaces for kernel-mode proxy tests.

    client (10.200.0.2) --veth-- node (router; the proxy's rules live here) --veth-- bN (10.201.N.2)

Every name starts with ``sn-px<id>`` and everything is deleted by name in
:meth:`Topology.destroy`, even after a failure. Nothing touches the host's
own namespace except the creation of the namespaces themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sh(*argv: str, check: bool = True) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {res.stderr.strip()}")
    return res.stdout


class Topology:
    def __init__(self, backends: int = 3) -> None:
        self.id = uuid.uuid4().hex[:6]
        self.node = f"sn-px{self.id}-node"
        self.client = f"sn-px{self.id}-cli"
        self.backends = [f"sn-px{self.id}-b{i}" for i in range(1, backends + 1)]
        self.procs: list[subprocess.Popen[str]] = []

    def backend_ip(self, i: int) -> str:
        return f"10.201.{i}.2"

    def create(self) -> Topology:
        for ns in (self.node, self.client, *self.backends):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", self.node, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        self._link(self.client, "10.200.0.2", "10.200.0.1", tag="c")
        for i, ns in enumerate(self.backends, start=1):
            self._link(ns, self.backend_ip(i), f"10.201.{i}.1", tag=f"b{i}")
        return self

    def _link(self, ns: str, ip: str, gw: str, tag: str) -> None:
        inner, outer = f"snpx{self.id}{tag}i", f"snpx{self.id}{tag}o"
        sh(
            "ip",
            "link",
            "add",
            inner,
            "netns",
            ns,
            "type",
            "veth",
            "peer",
            "name",
            outer,
            "netns",
            self.node,
        )
        sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", inner)
        sh("ip", "-n", ns, "link", "set", inner, "up")
        sh("ip", "-n", self.node, "addr", "add", f"{gw}/24", "dev", outer)
        sh("ip", "-n", self.node, "link", "set", outer, "up")
        sh("ip", "-n", ns, "route", "add", "default", "via", gw)

    def python(self, ns: str, *args: str, stdin: bool = False) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "tests.support.proxy_peers", *args],
            stdout=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=ROOT,
        )
        self.procs.append(proc)
        return proc

    def start_backends(self, port: int) -> None:
        procs = [
            self.python(ns, "serve", f"b{i}", self.backend_ip(i), str(port))
            for i, ns in enumerate(self.backends, start=1)
        ]
        for p in procs:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready"

    def count(self, vip: str, port: int, n: int, udp: bool = False) -> dict[str, int]:
        args = ["count", vip, str(port), str(n)] + (["--udp"] if udp else [])
        proc = self.python(self.client, *args)
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise AssertionError(f"client failed rc={proc.returncode}")
        return json.loads(out)

    def destroy(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for ns in (self.client, *self.backends, self.node):
            sh("ip", "netns", "pids", ns, check=False)  # processes already killed above
            sh("ip", "netns", "del", ns, check=False)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(
            ns in sh("ip", "netns", "list", check=False) for ns in (self.node, self.client)
        ):
            time.sleep(0.1)
