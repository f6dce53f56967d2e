"""A running ``shiftnet lab`` for tests: the CLI builds it, helpers read it and send packets.

Everything goes through the real CLI (``shiftnet lab up``/``down``) and real
namespaces; packets are sent with small Python clients run by ``ip netns exec``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftnet.api import Pod
from shiftnet.client import Client
from shiftnet.sdn.topology import pod_netns
from shiftnet.store import open_store

POD_SERVER = """\
import http.server, os, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (os.environ["POD_NAME"] + " " + self.client_address[0] + "\\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("0.0.0.0", 8080), H).serve_forever()
"""

HTTP_GET = (
    "import sys,urllib.request\n"
    "print(urllib.request.urlopen(sys.argv[1],timeout=float(sys.argv[2])).read().decode().strip())"
)

ECHO_PEER = (
    "import socket,sys;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
    "s.bind((sys.argv[1],int(sys.argv[2])));s.listen();print('ready',flush=True)\n"
    "while True:\n c,a=s.accept();c.send(a[0].encode());c.close()"
)

TCP_ASK = (
    "import socket,sys;s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=3);"
    "print(s.recv(100).decode())"
)


def shiftnet(*argv: str, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "shiftnet", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError(f"shiftnet {' '.join(argv)} failed: {proc.stdout}{proc.stderr}")
    return proc.stdout


def in_ns(ns: str, *argv: str, timeout: float = 20, check: bool = True) -> str:
    proc = subprocess.run(
        ["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"in {ns}: {argv} failed: {proc.stderr.strip()[-400:]}")
    return proc.stdout


def http_get(ns: str, url: str, timeout: float = 3) -> str:
    """GET ``url`` from inside ``ns``; the body is '<pod name> <client address seen>'."""
    return in_ns(ns, sys.executable, "-c", HTTP_GET, url, str(timeout)).strip()


@dataclass
class LabHandle:
    state_dir: Path
    prefix: str
    store: str
    nodes: list[dict[str, str]]

    def cli(self, *argv: str) -> str:
        return shiftnet("--state-dir", str(self.state_dir), "--store", self.store, *argv)

    def lab(self, *argv: str) -> str:
        return shiftnet("--state-dir", str(self.state_dir), "lab", *argv, "--prefix", self.prefix)

    def node(self, i: int) -> dict[str, str]:
        return self.nodes[i - 1]

    @property
    def inet(self) -> str:
        return f"{self.prefix}-inet"

    def state(self) -> dict[str, Any]:
        path = self.state_dir / "lab" / self.prefix / "lab.json"
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def read(self, fn: Any) -> Any:
        async def go() -> Any:
            store = open_store(self.store)
            try:
                return await fn(Client(store))
            finally:
                await store.close()

        return asyncio.run(go())

    def pods(self) -> dict[str, Pod]:
        async def go(c: Client) -> dict[str, Pod]:
            return {p.name: p for p in await c.list(Pod, "default")}

        result: dict[str, Pod] = self.read(go)
        return result

    def pod_ns(self, pod: Pod) -> str:
        return pod_netns(pod.spec.node_name or "", pod.namespace or "default", pod.name)

    def wait(self, what: str, check: Any, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = check()
            if last:
                return last
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def new_prefix() -> str:
    return f"sn-l{uuid.uuid4().hex[:5]}"


# passes only inside a pod's namespace: the node's eth0 holds a 192.168.250.x address
EXEC_PROBE = {
    "exec": {"command": ["sh", "-c", "ip -4 -o addr show dev eth0 | grep -q ' 10[.]1[.]'"]},
    "periodSeconds": 1,
}


def manifests(
    server: Path, placement: dict[str, str], exec_probe: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Pods (name → node) running the HTTP server, a Service over them, an edge Route;
    pods named in ``exec_probe`` get an exec readiness probe instead of tcpSocket."""
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "web",
                        "command": [sys.executable, str(server)],
                        "ports": [{"containerPort": 8080}],
                        "env": [{"name": "POD_NAME", "value": name}],
                        "readinessProbe": EXEC_PROBE
                        if name in exec_probe
                        else {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                    }
                ],
            },
        }
        for name, node in sorted(placement.items())
    ]
    items.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        }
    )
    items.append(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "host": "web.lab.example",
                "to": {"kind": "Service", "name": "web"},
                "port": {"targetPort": 8080},
                "tls": {"termination": "edge"},
            },
        }
    )
    return {"apiVersion": "v1", "kind": "List", "items": items}
