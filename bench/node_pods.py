#!/usr/bin/env python3
"""How fast the node agent runs pods and how fast Endpoints follow them.

Two measurements, side by side in one run:

* **Start N pods**: N podserver pods (tcpSocket readiness, periodSeconds 1)
  created at once; seconds until every pod is Ready in the store and until
  the Service's Endpoints list all N. Reference: the same N podserver
  processes started directly with ``subprocess`` on the same kind of
  addresses, timed until each accepts a TCP connection (the floor no agent
  can beat). The ratio is agent / direct.
* **Process death → Endpoints**: K times, SIGKILL one pod's process and time
  until a watcher sees its address leave the Endpoints' ``addresses``
  (pidfd wake-up, status write, endpoints controller), and until it is back
  (restart after the crash-loop delay, probe, status, endpoints).

Prints a table and writes JSON.

    .venv/bin/python bench/node_pods.py [--pods 50] [--kills 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.node import PODSERVER, server_pod  # noqa: E402

from shiftnet.api import Endpoints, Pod, parse_object  # noqa: E402
from shiftnet.client import Client  # noqa: E402
from shiftnet.master import Master, MasterConfig  # noqa: E402
from shiftnet.sdn import NodeAgent, NodeConfig  # noqa: E402
from shiftnet.store import open_store  # noqa: E402

BENCH_NET = "127.111.0.0/16"  # nothing else should use it while the bench runs
DIRECT_NET = "127.112.0"


def ready_ips(ep: Endpoints | None) -> set[str]:
    if ep is None:
        return set()
    return {a.ip for s in ep.subsets for a in s.addresses}


async def poll(fn, timeout: float = 120.0, interval: float = 0.01):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        res = await fn()
        if res:
            return res
        await asyncio.sleep(interval)
    raise TimeoutError("benchmark condition not reached")


def direct_start(n: int) -> float:
    """N podservers started straight from subprocess; seconds until all accept."""
    env_base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    procs = []
    t0 = time.monotonic()
    try:
        for i in range(n):
            env = dict(env_base, POD_IP=f"{DIRECT_NET}.{i + 2}", PORT="8080", POD_NAME=f"d{i}")
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(PODSERVER)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        pending = {f"{DIRECT_NET}.{i + 2}" for i in range(n)}
        while pending:
            for ip in sorted(pending):
                try:
                    with socket.create_connection((ip, 8080), timeout=0.2):
                        pending.discard(ip)
                except OSError:
                    pass
            if pending:
                time.sleep(0.01)
        return time.monotonic() - t0
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


async def agent_run(n: int, kills: int, state: Path) -> dict[str, object]:
    store = open_store(f"sqlite://{state}/state.db")
    client = Client(store)
    master = Master(store, MasterConfig.build("local", cluster_network=BENCH_NET))
    await master.start()
    agent = NodeAgent(store, NodeConfig(node_name="bench", state_dir=state))
    await agent.start()
    await agent.wait_for_subnet(30)
    probe = {"tcpSocket": {"port": "web"}, "periodSeconds": 1}
    try:
        await client.create(
            parse_object(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {
                        "selector": {"app": "web"},
                        "ports": [{"port": 80, "targetPort": "web"}],
                    },
                }
            )
        )
        t0 = time.monotonic()
        await asyncio.gather(
            *(client.create(server_pod(f"p{i}", node="bench", probe=probe)) for i in range(n))
        )

        async def all_ready() -> list[Pod] | None:
            pods = await client.list(Pod, "default")
            return pods if len(pods) == n and all(p.ready for p in pods) else None

        pods = await poll(all_ready)
        t_ready = time.monotonic() - t0
        ips = {p.status.pod_ip for p in pods}

        async def all_listed() -> bool:
            return ready_ips(await client.try_get(Endpoints, "default", "web")) == ips

        await poll(all_listed)
        t_endpoints = time.monotonic() - t0

        out_times: list[float] = []
        back_times: list[float] = []
        for k in range(kills):
            name = f"p{k % n}"
            pod = await client.get(Pod, "default", name)
            ip = pod.status.pod_ip
            [pid] = agent.pod_pids()[("default", name)]
            t1 = time.monotonic()
            os.kill(pid, signal.SIGKILL)

            async def gone(ip: str | None = ip) -> bool:
                return ip not in ready_ips(await client.try_get(Endpoints, "default", "web"))

            await poll(gone)
            out_times.append(time.monotonic() - t1)

            async def back(ip: str | None = ip) -> bool:
                return ip in ready_ips(await client.try_get(Endpoints, "default", "web"))

            await poll(back)
            back_times.append(time.monotonic() - t1)
        return {
            "ready_s": t_ready,
            "endpoints_s": t_endpoints,
            "kill_to_out_s": out_times,
            "kill_to_back_s": back_times,
        }
    finally:
        await agent.stop()
        await master.stop()
        await store.close()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pods", type=int, default=50)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "node_pods.json"))
    args = ap.parse_args()
    if not 1 <= args.pods <= 250:
        ap.error("--pods must be between 1 and 250 (one /24 of pod addresses)")

    direct = direct_start(args.pods)
    with tempfile.TemporaryDirectory(prefix="sn-bench-node-") as tmp:
        res = asyncio.run(agent_run(args.pods, args.kills, Path(tmp)))
    ready = float(res["ready_s"])  # type: ignore[arg-type]
    eps = float(res["endpoints_s"])  # type: ignore[arg-type]
    outs: list[float] = res["kill_to_out_s"]  # type: ignore[assignment]
    backs: list[float] = res["kill_to_back_s"]  # type: ignore[assignment]

    rows = [
        ("what", "shiftnet node agent", "direct subprocess", "ratio"),
        (
            f"start {args.pods} pods → all ready/accepting",
            f"{ready:.2f} s",
            f"{direct:.2f} s",
            f"{ready / direct:.2f}x",
        ),
        (f"start {args.pods} pods → Endpoints list all", f"{eps:.2f} s", "-", "-"),
        (
            "SIGKILL → out of Endpoints (median / p95)",
            f"{statistics.median(outs) * 1000:.0f} / {pct(outs, 0.95) * 1000:.0f} ms",
            "-",
            "-",
        ),
        (
            "SIGKILL → back in Endpoints (median / p95)",
            f"{statistics.median(backs):.2f} / {pct(backs, 0.95):.2f} s",
            "-",
            "-",
        ),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "pods": args.pods,
        "kills": args.kills,
        "direct_start_s": direct,
        **res,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2, sort_keys=True))
    print(f"\nJSON: {args.json}")


if __name__ == "__main__":
    main()
