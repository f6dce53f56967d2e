#!/usr/bin/env python3
"""How fast the master controllers react, on SQLite next to a real etcd.

Two measurements per store backend, in one run:

* **ClusterIPs**: N Services created at once; seconds until every one has an
  address, with the allocator's keyed work queue at 1 worker and at 8
  (the side-by-side ratio shows what per-key concurrency buys).
* **Endpoints latency**: a Service selecting P ready pods (among S other
  Services in the namespace); K times, flip one pod's readiness and time from
  the moment the pod write returns until a watcher sees the Endpoints move
  that address between ``addresses`` and ``notReadyAddresses``.

Prints a table and writes JSON.

    .venv/bin/python bench/master_controllers.py [--services 300] [--flips 100] [--no-etcd]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.master import pod, service  # noqa: E402

from shiftnet.api import Endpoints, Pod, Service  # noqa: E402
from shiftnet.client import Client  # noqa: E402
from shiftnet.informer import Informers  # noqa: E402
from shiftnet.master import Master, MasterConfig  # noqa: E402
from shiftnet.store import open_store  # noqa: E402


async def wipe(url: str) -> None:
    if url.startswith("etcd://"):
        import httpx

        host = url[len("etcd://") :]
        async with httpx.AsyncClient() as h:
            await h.post(
                f"http://{host}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}
            )


async def cluster_ips(url: str, n: int, workers: int) -> float:
    await wipe(url)
    mstore, cstore = open_store(url), open_store(url)
    client = Client(cstore)
    master = Master(mstore, MasterConfig.build(workers=workers, scheduler=False))
    await master.start()
    try:
        t0 = time.monotonic()
        gate = asyncio.Semaphore(100)  # the etcd backend's HTTP pool size

        async def create(i: int) -> None:
            async with gate:
                await client.create(service(f"s{i:04d}"))

        await asyncio.gather(*(create(i) for i in range(n)))
        while True:
            got = await client.list(Service)
            if len(got) == n and all(s.spec.cluster_ip for s in got):
                break
            await asyncio.sleep(0.01)
        elapsed = time.monotonic() - t0
        assert len({s.spec.cluster_ip for s in got}) == n
        return elapsed
    finally:
        await master.stop()
        await mstore.close()
        await cstore.close()


async def endpoints_latency(url: str, pods: int, others: int, flips: int) -> list[float]:
    await wipe(url)
    mstore, cstore, wstore = open_store(url), open_store(url), open_store(url)
    client = Client(cstore)
    master = Master(mstore, MasterConfig.build(scheduler=False))
    await master.start()
    watchers = Informers(wstore)
    eps = watchers.informer(Endpoints)
    changed = asyncio.Event()
    eps.add_handler(lambda et, old, new: changed.set())
    await watchers.start()
    try:
        for i in range(others):
            await client.create(service(f"other-{i}", selector={"app": f"other-{i}"}))
        await client.create(service("web", selector={"app": "web"}))
        for i in range(pods):
            await client.create(
                pod(f"web-{i}", f"127.10.{i // 250}.{i % 250 + 2}", labels={"app": "web"})
            )

        def ready_ips() -> set[str]:
            ep = eps.get("default", "web")
            return {a.ip for s in ep.subsets for a in s.addresses} if ep else set()

        while len(ready_ips()) < pods:
            await asyncio.sleep(0.01)
        samples: list[float] = []
        for k in range(flips):
            name = f"web-{k % pods}"
            target = await client.get(Pod, "default", name)
            now_ready = not target.ready
            target.status.conditions[0].status = "True" if now_ready else "False"
            ip = target.status.pod_ip or ""
            changed.clear()
            await client.update(target)
            t0 = time.monotonic()
            while (ip in ready_ips()) != now_ready:
                changed.clear()
                await changed.wait()
            samples.append(time.monotonic() - t0)
        return samples
    finally:
        await watchers.stop()
        await master.stop()
        for s in (mstore, cstore, wstore):
            await s.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    backends: list[tuple[str, str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="sn-bench-master-"))
    backends.append(("sqlite", f"sqlite://{tmp}/state.db"))
    etcd = None
    if not args.no_etcd and shutil.which("etcd"):
        from tests.support.etcd import EtcdServer

        etcd = EtcdServer()
        etcd.start()
        backends.append(("etcd", etcd.url))
    results: dict[str, dict[str, float]] = {}
    try:
        for name, url in backends:
            if url.startswith("sqlite://"):
                Path(url[len("sqlite://") :]).unlink(missing_ok=True)
            r: dict[str, float] = {}
            r["clusterip_1_worker_s"] = await cluster_ips(url, args.services, 1)
            if url.startswith("sqlite://"):
                Path(url[len("sqlite://") :]).unlink(missing_ok=True)
            r["clusterip_8_workers_s"] = await cluster_ips(url, args.services, 8)
            if url.startswith("sqlite://"):
                Path(url[len("sqlite://") :]).unlink(missing_ok=True)
            lat = await endpoints_latency(url, args.pods, args.other_services, args.flips)
            r["endpoints_p50_ms"] = statistics.median(lat) * 1000
            r["endpoints_p95_ms"] = pct(lat, 0.95) * 1000
            r["endpoints_max_ms"] = max(lat) * 1000
            results[name] = r
    finally:
        if etcd is not None:
            etcd.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--services", type=int, default=300)
    ap.add_argument("--pods", type=int, default=50)
    ap.add_argument("--other-services", type=int, default=100)
    ap.add_argument("--flips", type=int, default=100)
    ap.add_argument("--no-etcd", action="store_true")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "master_controllers.json"))
    args = ap.parse_args()
    results = asyncio.run(run(args))
    names = list(results)
    rows = [
        (f"{args.services} ClusterIPs, 1 worker (s)", "clusterip_1_worker_s"),
        (f"{args.services} ClusterIPs, 8 workers (s)", "clusterip_8_workers_s"),
        ("endpoints after readiness flip p50 (ms)", "endpoints_p50_ms"),
        ("endpoints after readiness flip p95 (ms)", "endpoints_p95_ms"),
        ("endpoints after readiness flip max (ms)", "endpoints_max_ms"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{n:>10}" for n in names))
    for label, key in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{results[n][key]:>10.2f}" for n in names))
    for n in names:
        r = results[n]
        print(
            f"{n}: 8 workers are {r['clusterip_1_worker_s'] / r['clusterip_8_workers_s']:.2f}x "
            "faster than 1 at allocating ClusterIPs"
        )
    out = {
        "benchmark": "master_controllers",
        "params": vars(args),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "results": results,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
