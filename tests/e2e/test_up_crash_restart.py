"""``shiftnet up`` killed with SIGKILL and started again: its pods keep serving throughout.

A crash leaves the pod processes (and HAProxy) running; the next ``shiftnet up``
adopts them. While it does, the store must never say the pod is not ready and
the Service's Endpoints must never lose the pod's address, or every route to
it answers 503 until the first probe passes. A watch on the store records
every change from before the kill until the restarted cluster has settled.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_up import UpProcess, pod_pids, through_router
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network, free_port

from shiftnet.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
HOST = "crash.example.com"

MANIFEST = f"""\
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: crash
  labels: {{app: web}}
  annotations: {{shiftnet.io/workdir: "{REPO / "examples" / "demo"}"}}
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - name: web
      command: ["python3", "podserver.py"]
      ports: [{{name: web, containerPort: 8080}}]
      readinessProbe:
        httpGet: {{path: /healthz, port: web}}
        periodSeconds: 1
        failureThreshold: 2
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: crash}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: web}}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {{name: web, namespace: crash}}
spec:
  host: {HOST}
  to: {{kind: Service, name: web}}
"""


class StoreWatch:
    """Every Pod and Endpoints change in one namespace, recorded from a thread."""

    def __init__(self, url: str, namespace: str) -> None:
        self.url, self.namespace = url, namespace
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(30), "store watch did not start"

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        store = open_store(self.url)
        try:
            rev = await store.revision()

            async def follow(resource: str) -> None:
                async for ev in store.watch(resource, rev, self.namespace):
                    self.events.append((resource, ev.object))

            tasks = [asyncio.ensure_future(follow(r)) for r in ("pods", "endpoints")]
            self._ready.set()
            try:
                await asyncio.gather(*tasks)
            except asyncio.CancelledError:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await store.close()

    def stop(self) -> None:
        if self._loop is not None and self._main is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._main.cancel)
        self._thread.join(timeout=10)


def pod_ready(obj: dict[str, Any]) -> bool:
    conds = obj.get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def ready_addresses(obj: dict[str, Any]) -> list[str]:
    return [a["ip"] for s in obj.get("subsets", []) for a in s.get("addresses", [])]


class RouterClient:
    """GETs through the router in a loop until stopped; counts what did not answer 200."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.ok = 0
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                conn.request("GET", "/", headers={"Host": HOST})
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    self.ok += 1
                else:
                    self.failed.append(f"HTTP {resp.status}")
            except OSError as err:
                self.failed.append(f"{type(err).__name__}: {err}")
            finally:
                conn.close()
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def test_restart_after_sigkill_keeps_the_pod_ready_and_in_its_endpoints(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(state)
    env["SHIFTNET_CLUSTERS_DIR"] = str(tmp_path / "clusters")  # not the user's own registry
    http_port = free_port()
    env["ROUTER_SERVICE_HTTP_PORT"] = str(http_port)
    env["ROUTER_SERVICE_HTTPS_PORT"] = str(free_port())
    env["STATS_PORT"] = str(free_port())
    env["SHIFTNET_DNS_LISTEN"] = f"127.0.0.1:{free_port()}"
    env["SHIFTNET_API_LISTEN"] = f"127.0.0.1:{free_port()}"  # never the host's 6443
    manifest = tmp_path / "crash.yaml"
    manifest.write_text(MANIFEST)
    net = free_cluster_network()  # apart from other clusters' pods
    args = ["up", "--node-name", "crash", "--cluster-network", net]
    first = UpProcess([*args, "-f", str(manifest)], cwd=tmp_path, env=env)
    second: UpProcess | None = None
    watch = StoreWatch(f"sqlite://{state / 'state.db'}", "crash")
    client = RouterClient(http_port)
    try:
        first.read_until(r"Press Ctrl-C", timeout=120)
        assert "ns=crash" in through_router(str(http_port), HOST, "/")
        [pod_pid] = pod_pids(state)
        watch.start()
        client.start()
        time.sleep(0.5)
        os.kill(first.proc.pid, signal.SIGKILL)  # a crash: the pod and HAProxy live on
        first.proc.wait(timeout=30)
        assert pod_pids(state) == [pod_pid]
        second = UpProcess(args, cwd=tmp_path, env=env)
        second.read_until(r"Press Ctrl-C", timeout=120)
        time.sleep(3)  # several probe periods of the adopted pod
        client.stop()
        watch.stop()
        assert pod_pids(state) == [pod_pid], "the restarted node adopts the same process"

        pods = [obj for res, obj in watch.events if res == "pods"]
        endpoints = [obj for res, obj in watch.events if res == "endpoints"]
        not_ready = [p["status"] for p in pods if not pod_ready(p)]
        assert not not_ready, f"the adopted pod was reported not ready: {not_ready[0]}"
        empty = [e for e in endpoints if not ready_addresses(e)]
        assert not empty, f"the Service lost its address during the restart: {empty[0]}"
        assert client.ok > 0
        assert not client.failed, (
            f"{len(client.failed)} of {client.ok + len(client.failed)} requests through the "
            f"router failed during the restart: {client.failed[:5]}"
        )
    finally:
        client.stop()
        watch.stop()
        for up in (first, second):
            if up is not None:
                stop_up(up.proc, state)  # and a crashed up's pods and HAProxy, by pid
