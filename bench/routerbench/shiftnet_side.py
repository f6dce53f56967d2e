"""shiftnet's side: objects written through ``Client`` and the real router as its own process.

Why a separate process (``shiftnet router``): its RSS is then the router's
alone, not the benchmark's, and it is exactly what a user runs. The router
reads the same sqlite store the benchmark writes to; its metrics endpoint
gives reload and runtime-API counts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from routerbench import procs
from routerbench.workload import NAMESPACE, BenchRoute
from shiftnet.api import Endpoints, Namespace, Route, Service
from shiftnet.client import Client

SHIFTNET = str(Path(sys.executable).with_name("shiftnet"))


def service(name: str, pod_port: int) -> Service:
    return Service.model_validate(
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "selector": {"app": name},
                "ports": [{"name": "http", "port": 80, "targetPort": pod_port}],
            },
        }
    )


def endpoints(name: str, ready: list[str], pod_port: int, not_ready: list[str] = ()) -> Endpoints:  # type: ignore[assignment]
    def addr(ip: str) -> dict[str, Any]:
        pod = "pod-" + ip.replace(".", "-")
        return {"ip": ip, "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": pod}}

    subset: dict[str, Any] = {
        "addresses": [addr(i) for i in ready],
        "ports": [{"name": "http", "port": pod_port}],
    }
    if not_ready:
        subset["notReadyAddresses"] = [addr(i) for i in not_ready]
    return Endpoints.model_validate(
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "subsets": [subset] if ready or not_ready else [],
        }
    )


def route(r: BenchRoute) -> Route:
    spec: dict[str, Any] = {"host": r.host, "to": {"kind": "Service", "name": r.name}}
    if r.path:
        spec["path"] = r.path
    return Route.model_validate(
        {"metadata": {"name": r.name, "namespace": NAMESPACE}, "spec": spec}
    )


async def populate(
    client: Client, rs: list[BenchRoute], pods: dict[str, list[str]], pod_port: int
) -> float:
    """Create Service, Endpoints and Route for each route (Namespace first); seconds taken."""
    t0 = time.monotonic()
    if await client.try_get(Namespace, None, NAMESPACE) is None:
        await client.create(Namespace.model_validate({"metadata": {"name": NAMESPACE}}))
    for r in rs:
        await client.create(service(r.name, pod_port))
        await client.create(endpoints(r.name, pods[r.name], pod_port))
        await client.create(route(r))
    return time.monotonic() - t0


class RouterProcess:
    """``shiftnet router`` on free loopback ports, with its own work dir and metrics port."""

    def __init__(self, base: Path, store_url: str, reload_interval: str) -> None:
        self.base = base  # short: HAProxy's UNIX socket paths must fit in 107 bytes
        self.store_url = store_url
        self.work_dir = base / "router"
        self.http_port = procs.free_port()
        self.https_port = procs.free_port()
        self.stats_port = procs.free_port()
        self.metrics_port = procs.free_port()
        self.reload_interval = reload_interval
        self.proc = None

    def start(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            {
                "ROUTER_SERVICE_HTTP_PORT": str(self.http_port),
                "ROUTER_SERVICE_HTTPS_PORT": str(self.https_port),
                "STATS_PORT": str(self.stats_port),
                "ROUTER_BIND_ADDRESS": "127.0.0.1",
                "ROUTER_WORK_DIR": str(self.work_dir),
                "RELOAD_INTERVAL": self.reload_interval,
                "SHIFTNET_HOME": str(self.base),
            }
        )
        self.proc = procs.spawn(
            [
                SHIFTNET,
                "--store",
                self.store_url,
                "--state-dir",
                str(self.base),
                "-v",
                "router",
                "--metrics-listen",
                f"127.0.0.1:{self.metrics_port}",
            ],
            self.base / "router.log",
            env=env,
        )

    async def wait_ready(
        self, probe_host: str, probe_path: str, want: str, timeout: float = 600.0
    ) -> float:
        """Seconds until ``probe_host`` answers ``want`` through the router."""
        from routerbench.http import get

        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError("router exited: " + self.log_tail())
            status, body = await get(self.http_port, probe_host, probe_path, timeout=2)
            if status == 200 and body == want:
                return time.monotonic() - t0
            await asyncio.sleep(0.05)
        raise RuntimeError(
            f"router did not serve {probe_host}{probe_path} in {timeout}s: " + self.log_tail()
        )

    def log_tail(self) -> str:
        try:
            return (self.base / "router.log").read_text()[-1500:]
        except OSError:
            return ""

    def metrics(self) -> dict[str, float]:
        """Counters from ``/metrics`` (label sets summed by metric name)."""
        text = (
            urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5)
            .read()
            .decode()
        )
        out: dict[str, float] = {}
        for line in text.splitlines():
            m = re.match(r"^([a-zA-Z_:]+)(\{[^}]*\})? ([-0-9.eE+]+|NaN)$", line)
            if m:
                out[m[1]] = out.get(m[1], 0.0) + float(m[3])
        return out

    def router_rss_kb(self) -> int:
        return procs.rss_kb(self.proc.pid) if self.proc else 0

    def haproxy_rss_kb(self) -> tuple[int, int]:
        """(all HAProxy processes of this router, how many there are)."""
        pids = procs.haproxy_family(str(self.work_dir))
        return sum(procs.rss_kb(p) for p in pids), len(pids)

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop(self.proc.pid, timeout=15)
            self.proc = None
        procs.kill_haproxy(str(self.work_dir))


async def render_times(store_url: str, work_dir: Path, runs: int = 3) -> dict:
    """Cold admission + model + render over what the store holds, best of ``runs``.

    Each run is a fresh process (``routerbench.render_probe``): nothing is
    memoised or cached from an earlier run. The best total is reported (the
    machine is shared; noise only ever adds time), with every run's total.
    """
    out: list[dict] = []
    for _ in range(runs):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "routerbench.render_probe",
            store_url,
            str(work_dir),
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        stdout, _ = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError("render probe failed")
        out.append(json.loads(stdout))

    def total(r: dict) -> float:
        return float(r["admit_s"] + r["model_s"] + r["render_cold_s"])

    best = dict(min(out, key=total))
    best["runs_total_s"] = [round(total(r), 3) for r in out]
    return best
