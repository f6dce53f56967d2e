"""Router process memory at N routes: the real ``shiftnet router`` on a SQLite store.

Why a separate, small benchmark: ``router_scale.py`` takes many minutes; this
one answers "how much does the router process itself hold at 10,000 routes"
in about a minute, so a memory change can be compared side by side. The
store (N Services, Endpoints with one pod each, Routes, laid out like the
scale benchmark's "own" workload) is built once and copied for each run.

    .venv/bin/python bench/router_memory.py --routes 10000 [--seconds 40]

Prints the RSS when every route is served, when every route has this
router's status, the RSS ``--seconds`` later (settled) and the peak (VmHWM).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from routerbench import procs, workload
from routerbench import shiftnet_side as side

from shiftnet.client import Client
from shiftnet.store import open_store

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


def _statuses(db: Path) -> int:
    """Routes whose status the router has written (read-only look at the store)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute(
                "SELECT COUNT(*) FROM objects WHERE resource='routes' AND data LIKE '%routerName%'"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return -1
    return int(row[0])


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
        served_at = statuses_at = None
        while time.monotonic() - t0 < 900:
            if router.proc.poll() is not None:
                raise RuntimeError("router exited: " + router.log_tail())
            now = time.monotonic() - t0
            samples.append((now, _status_kb(pid, "VmRSS")))
            if served_at is None and _served(router.work_dir, n):
                served_at = now
                print(
                    f"  served every route at {now:.1f}s rss={samples[-1][1] / 1024:.1f} MB",
                    flush=True,
                )
            if served_at is not None and statuses_at is None and _statuses(db) >= n:
                statuses_at = now
                print(
                    f"  every status written at {now:.1f}s rss={samples[-1][1] / 1024:.1f} MB",
                    flush=True,
                )
            if statuses_at is not None and now > statuses_at + seconds:
                break
            if len(samples) % 20 == 0:
                print(f"  {now:5.1f}s rss={samples[-1][1] / 1024:.1f} MB", flush=True)
            time.sleep(0.5)
        hwm = _status_kb(pid, "VmHWM")
        settled = _status_kb(pid, "VmRSS")
    finally:
        router.stop()
        with contextlib.suppress(OSError):  # kept for a look at what the router did
            shutil.copy(base / "router.log", CACHE / "last-router.log")
        shutil.rmtree(base, ignore_errors=True)
    result = {
        "routes": n,
        "served_s": round(served_at or -1, 1),
        "statuses_s": round(statuses_at or -1, 1),
        "rss_settled_mb": round(settled / 1024, 1),
        "rss_peak_mb": round(hwm / 1024, 1),
    }
    print(label, json.dumps(result), flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routes", type=int, default=10000)
    ap.add_argument(
        "--seconds",
        type=float,
        default=20.0,
        help="keep sampling this long after every route is served and has a status",
    )
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
