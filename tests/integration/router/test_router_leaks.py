"""Thousands of short requests through a real ``shiftnet router`` and its HAProxy:
the router process, the HAProxy master and its worker come back to the
descriptors and RSS they started with. Each listener is covered: the HTTP
frontend, the HTTPS frontend (TLS handshakes of an edge route, which HAProxy
terminates, and of a passthrough route, which it relays by SNI), the stats page
behind its generated password, and the router's own metrics listener.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.support.backends import Backend, backends
from tests.support.cli import SHIFTNET, Shiftnet
from tests.support.leaks import LeakProbe, LeakProbes
from tests.support.ports import free_port
from tests.support.router import haproxy_pids_using, kill_haproxy, request
from tests.support.tls import TestCA

from shiftnet.router.stats_auth import CREDENTIALS_FILE

pytestmark = pytest.mark.integration

REQUESTS = 3000
CONCURRENCY = 16
SCRAPES = 300
TLS_CONNECTIONS = 1000  # per route (2,000 handshakes in all): each costs more than a request
STATS_REQUESTS = 2000
HOST = "leak.example.com"
EDGE_HOST = "edge.leak.example.com"
PASSTHROUGH_HOST = "passthrough.leak.example.com"
# Allocators and HAProxy's pools keep freed memory; a per-request leak of 3,000
# requests (buffers of 16 KiB each in HAProxy) would be far above these.
RSS_GROWTH_KIB = 16 * 1024
# HAProxy may keep a few idle server-side connections for reuse.
HAPROXY_FD_SLACK = CONCURRENCY

OBJECTS = """\
apiVersion: v1
kind: Namespace
metadata: {{name: leak}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: leak}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: {port}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: web, namespace: leak}}
subsets:
- addresses: [{addresses}]
  ports: [{{name: http, port: {port}}}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {{name: web, namespace: leak}}
spec:
  host: {host}
  to: {{kind: Service, name: web}}
"""


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="snl-", dir="/tmp"))  # short: HAProxy socket paths
    try:
        yield path
    finally:
        kill_haproxy(path / "router-router")
        shutil.rmtree(path, ignore_errors=True)


async def one_request(port: int) -> bool:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET / HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        reply = await asyncio.wait_for(reader.read(), 5)
        return reply.startswith(b"HTTP/1.1 200")
    finally:
        writer.close()
        await writer.wait_closed()


async def many_requests(port: int, count: int) -> int:
    ok = 0
    queue = iter(range(count))

    async def worker() -> None:
        nonlocal ok
        for _ in queue:
            if await one_request(port):  # not `ok += await`: that reads ok before awaiting
                ok += 1

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return ok


def wait_200(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if request(port, HOST).status == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"route {HOST} never answered 200"
        time.sleep(0.05)


def scrape(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return bool(r.status == 200)


def probes(router_pid: int, work_dir: Path) -> LeakProbes:
    found = [LeakProbe(router_pid, name="shiftnet router", rss_growth_kib=RSS_GROWTH_KIB)]
    for pid in sorted(haproxy_pids_using(work_dir)):
        found.append(
            LeakProbe(
                pid,
                name=f"haproxy pid {pid}",
                fd_slack=HAPROXY_FD_SLACK,
                rss_growth_kib=RSS_GROWTH_KIB,
            )
        )
    assert len(found) >= 2, "no HAProxy process found"
    return LeakProbes(found)


@dataclass
class RunningRouter:
    """A ``shiftnet router`` process on free loopback ports, serving the applied objects."""

    proc: subprocess.Popen[str]
    http: int
    https: int
    stats: int
    prom: int
    work_dir: Path

    def probes(self) -> LeakProbes:
        return probes(self.proc.pid, self.work_dir)


@contextlib.contextmanager
def running_router(home: Path, tmp_path: Path, manifest: str) -> Iterator[RunningRouter]:
    """Apply ``manifest``, start the router on it (stats page with its default, generated
    password) and stop it at the end."""
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", home)
    http, https, stats, prom = free_port(), free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(home)
    path = tmp_path / "leak.yaml"
    path.write_text(manifest)
    sn.ok("apply", "-f", str(path))
    proc = subprocess.Popen(
        [SHIFTNET, "--store", sn.store, "router", f"--http-port={http}",
         f"--https-port={https}", f"--stats-port={stats}", "--bind-address=127.0.0.1",
         f"--metrics-listen=127.0.0.1:{prom}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield RunningRouter(proc, http, https, stats, prom, home / "router-router")
        assert proc.poll() is None
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def served(name: str, host: str, pods: list[Backend], **spec: Any) -> list[dict[str, Any]]:
    """Service, Endpoints and Route ``name`` in namespace ``leak``, towards ``pods``."""
    port = pods[0].port
    route_spec = {"host": host, "to": {"kind": "Service", "name": name}, **spec}
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "leak"},
         "spec": {"selector": {"app": name}, "ports": [{"port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": "leak"},
         "subsets": [{"addresses": [{"ip": p.ip} for p in pods], "ports": [{"port": port}]}]},
        {"apiVersion": "route.openshift.io/v1", "kind": "Route",
         "metadata": {"name": name, "namespace": "leak"}, "spec": route_spec},
    ]  # fmt: skip


def as_manifest(objects: list[dict[str, Any]]) -> str:
    """YAML documents (JSON is YAML: certificates need no block scalars)."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leak"}}
    return "---\n".join(json.dumps(o) + "\n" for o in [namespace, *objects])


def run_in_threads(call: Callable[[int], bool], count: int) -> int:
    """``call(0)`` ... ``call(count - 1)`` from CONCURRENCY threads: how many returned True."""
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return sum(pool.map(call, range(count)))


def wait_until(call: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if call():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{what}: not there after {timeout:g} s"
        time.sleep(0.05)


async def test_router_and_haproxy_leave_no_descriptors(home: Path, tmp_path: Path) -> None:
    with backends("leak-1", "leak-2", port=free_port()) as pods:
        addresses = ", ".join(
            f"{{ip: {p.ip}, targetRef: {{kind: Pod, name: {p.name}}}}}" for p in pods
        )
        manifest = OBJECTS.format(port=pods[0].port, addresses=addresses, host=HOST)
        with running_router(home, tmp_path, manifest) as router:
            http, prom = router.http, router.prom
            await asyncio.to_thread(wait_200, http)
            assert await many_requests(http, 200) == 200  # warm-up: pools, first-use memory
            assert all([await asyncio.to_thread(scrape, prom) for _ in range(20)])
            measured = router.probes()
            assert await many_requests(http, REQUESTS) == REQUESTS
            assert all([await asyncio.to_thread(scrape, prom) for _ in range(SCRAPES)])
            await measured.settled()
            print(measured.summary())


def test_tls_handshakes_of_edge_and_passthrough_routes_leave_no_descriptors(
    home: Path, tmp_path: Path
) -> None:
    ca = TestCA()
    edge_cert = ca.issue(EDGE_HOST)
    with (
        backends("edge-pod", port=free_port()) as edge_pods,
        backends("tls-pod", tls=ca.issue(PASSTHROUGH_HOST)) as tls_pods,
    ):
        edge_tls = {
            "termination": "edge",
            "certificate": edge_cert.cert_pem,
            "key": edge_cert.key_pem,
        }
        objects = [
            *served("edge", EDGE_HOST, edge_pods, tls=edge_tls),
            *served("passthrough", PASSTHROUGH_HOST, tls_pods, tls={"termination": "passthrough"}),
        ]
        with running_router(home, tmp_path, as_manifest(objects)) as router:

            def edge(_: int = 0) -> bool:
                reply = request(router.https, EDGE_HOST, tls=True)
                return reply.status == 200 and reply.cert_sha256 == edge_cert.fingerprint

            def passthrough(_: int = 0) -> bool:
                return request(router.https, PASSTHROUGH_HOST, tls=True).backend == "tls-pod"

            wait_until(edge, EDGE_HOST)
            wait_until(passthrough, PASSTHROUGH_HOST)
            for call in (edge, passthrough):  # warm-up: session cache, pools, first use
                assert run_in_threads(call, 200) == 200
            measured = router.probes()
            assert run_in_threads(edge, TLS_CONNECTIONS) == TLS_CONNECTIONS
            assert run_in_threads(passthrough, TLS_CONNECTIONS) == TLS_CONNECTIONS
            measured.assert_settled()
            print(measured.summary())


def test_stats_page_with_its_password_leaves_no_descriptors(home: Path, tmp_path: Path) -> None:
    with running_router(home, tmp_path, as_manifest([])) as router:
        creds = router.work_dir / CREDENTIALS_FILE
        wait_until(creds.exists, str(creds))
        token = base64.b64encode(creds.read_text().strip().encode()).decode()
        with_password = {"Authorization": f"Basic {token}"}

        def page(number: int) -> bool:
            if number % 10 == 0:  # without the password: refused
                return request(router.stats, "stats").status == 401
            if number % 200 == 1:  # the HTML page (2.7 MB: it lists the spare backends)
                reply = request(router.stats, "stats", headers=with_password)
                return reply.status == 200 and "Statistics Report" in reply.body
            reply = request(router.stats, "stats", "/;csv;up", headers=with_password)
            return reply.status == 200 and "# pxname," in reply.body

        wait_until(lambda: page(1), f"stats page on port {router.stats}")
        assert run_in_threads(page, 200) == 200  # warm-up
        measured = router.probes()
        assert run_in_threads(page, STATS_REQUESTS) == STATS_REQUESTS
        measured.assert_settled()
        print(measured.summary())
