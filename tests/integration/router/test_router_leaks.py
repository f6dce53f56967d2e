"""Thousands of short requests through a real ``shiftnet router`` and its HAProxy:
the router process, the HAProxy master and its worker come back to the
descriptors and RSS they started with. The router's own listener (metrics) is
scraped a few hundred times too.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.backends import backends
from tests.support.cli import SHIFTNET, Shiftnet
from tests.support.leaks import LeakProbe, LeakProbes
from tests.support.ports import free_port
from tests.support.router import haproxy_pids_using, kill_haproxy, request

pytestmark = pytest.mark.integration

REQUESTS = 3000
CONCURRENCY = 16
SCRAPES = 300
HOST = "leak.example.com"
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


async def test_router_and_haproxy_leave_no_descriptors(home: Path, tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", home)
    http, https, stats, prom = free_port(), free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(home)
    with backends("leak-1", "leak-2", port=free_port()) as pods:
        addresses = ", ".join(
            f"{{ip: {p.ip}, targetRef: {{kind: Pod, name: {p.name}}}}}" for p in pods
        )
        manifest = tmp_path / "leak.yaml"
        manifest.write_text(OBJECTS.format(port=pods[0].port, addresses=addresses, host=HOST))
        sn.ok("apply", "-f", str(manifest))
        proc = subprocess.Popen(
            [SHIFTNET, "--store", sn.store, "router", f"--http-port={http}",
             f"--https-port={https}", f"--stats-port={stats}", "--bind-address=127.0.0.1",
             f"--metrics-listen=127.0.0.1:{prom}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            await asyncio.to_thread(wait_200, http)
            assert await many_requests(http, 200) == 200  # warm-up: pools, first-use memory
            assert all([await asyncio.to_thread(scrape, prom) for _ in range(20)])
            measured = probes(proc.pid, home / "router-router")
            assert await many_requests(http, REQUESTS) == REQUESTS
            assert all([await asyncio.to_thread(scrape, prom) for _ in range(SCRAPES)])
            await measured.settled()
            print(measured.summary())
            assert proc.poll() is None
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
