"""Router process memory at N routes: the real ``shiftnet router`` on a SQLite store.

Why a separate, small benchmark: ``router_scale.py`` takes many minutes; this
one answers "how much does the router process itself hold at 10,000 routes"
in about a minute, so a memory change can be compared side by side. The
store (N Services, Endpoints with one pod each, Routes, laid out like the
scale benchmark's "own" workload) is built once and copied for each run.

    .venv/bin/python bench/router_memory.py --routes 10000 [--seconds 40]

Prints VmRSS over time, the peak (VmHWM) and the RSS once the router has
served every route and written every status (settled).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from routerbench import procs, workload  # noqa: E402
from routerbench import shiftnet_side as side  # noqa: E402
from shiftnet.client import Client  # noqa: E402
from shiftnet.store import open_store  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "shiftnet-router-memory"
POD_PORT = 18080


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def _build(db: Path, n: int) -> None:
    store = open_store(f"sqlite:///{db}")
    try:
        rs = workload.routes(n)
        pods = {r.name: workload.pods_of(r, workload.OWN) for r in rs}
        await side.populate(Client(store), rs, pods, POD_PORT)
    finally:
        await store.close()


def store_for(n: int) -> Path:
    """A SQLite store with ``n`` routes (built once, then reused from the cache)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    db = CACHE / f"routes-{n}.db"
    if not db.exists():
        tmp = db.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        t0 = time.monotonic()
        asyncio.run(_build(tmp, n))
        tmp.rename(db)
        print(f"built store with {n} routes in {time.monotonic() - t0:.1f}s", flush=True)
    return db


def _served(work_dir: Path, n: int) -> bool:
    try:
        index = json.loads((work_dir / "run" / "backends.json").read_text())
    except (OSError, ValueError):
        return False
    return len(index) >= n


def measure(n: int, seconds: float, label: str) -> dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix="snmem-", dir="/tmp"))
    db = base / "state.db"
    shutil.copy(store_for(n), db)
    router = side.RouterProcess(base, f"sqlite:///{db}", "5s")
    samples: list[tuple[float, int]] = []
    try:
        router.start()
        assert router.proc is not None
        pid = router.proc.pid
        t0 = time.monotonic()
        served_at = None
        while time.monotonic() - t0 < 600:
            if router.proc.poll() is not None:
                raise RuntimeError("router exited: " + router.log_tail())
            samples.append((time.monotonic() - t0, _status_kb(pid, "VmRSS")))
            if served_at is None and _served(router.work_dir, n):
                served_at = time.monotonic() - t0
            if served_at is not None and time.monotonic() - t0 > served_at + seconds:
                break
            time.sleep(0.5)
        hwm = _status_kb(pid, "VmHWM")
        settled = _status_kb(pid, "VmRSS")
    finally:
        router.stop()
        shutil.rmtree(base, ignore_errors=True)
    result = {
        "routes": n,
        "served_s": round(served_at or -1, 1),
        "rss_settled_mb": round(settled / 1024, 1),
        "rss_peak_mb": round(hwm / 1024, 1),
    }
    print(label, json.dumps(result), flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routes", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="keep sampling this long after every route is served")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--label", default="router")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    try:
        for i in range(args.runs):
            measure(args.routes, args.seconds, f"{args.label}#{i + 1}")
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
