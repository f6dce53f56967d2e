#!/usr/bin/env python3
"""The router's admission, model and render steps: this tree against another commit.

Why a benchmark of its own: one render of 10,000 routes takes a fraction of a
second, and on a shared machine its wall time moves by more than the
differences worth knowing. So both trees run the same probe
(``routerbench/render_steps_probe.py``) over the same routes, each in fresh
processes, rounds interleaved (before, after, before, ...), and the table
shows:

* the median CPU seconds (``process_time``) of each step over ``--runs``
  rounds, with the range;
* with ``--instructions``, the instructions of each step counted by
  callgrind at ``--instruction-routes`` routes (a count, not a time: the same
  code and input give the same figure whatever else the machine does;
  ``PYTHONHASHSEED`` is fixed). A step's count is the probe run up to that
  step minus the run up to the step before.

The other tree is ``git archive``'d from ``--before`` (default: the commit
before the router's HAProxy layer was rebuilt on one description) and put
first on ``PYTHONPATH``; each probe prints the file it imported ``shiftnet``
from, and the run stops if a side imported the wrong tree. Each tree writes
its own SQLite store of the benchmark's routes (``routerbench.workload``).

    .venv/bin/python bench/router_render_ab.py                      # 10,000 routes, 7 rounds
    .venv/bin/python bench/router_render_ab.py --instructions       # and callgrind counts
    .venv/bin/python bench/router_render_ab.py --routes 1000 --runs 3   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
STEPS = ("load", "admit", "model", "render_cold", "render_warm")
DEFAULT_BEFORE = "0ea4c3c^"  # the tree before "one immutable description, one writer"

POPULATE = """
import asyncio, sys
from shiftnet.client import Client
from shiftnet.store import open_store
from routerbench import workload
from routerbench.shiftnet_side import populate

async def main(url, n, kind):
    store = open_store(url)
    try:
        rs = workload.routes(n)
        await populate(Client(store), rs, {r.name: workload.pods_of(r, kind) for r in rs}, 8080)
    finally:
        await store.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
"""


def side_env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{src}:{BENCH}"
    env["PYTHONHASHSEED"] = "0"
    return env


def extract(ref: str, into: Path) -> Path:
    """``src/`` of commit ``ref``, unpacked under ``into``."""
    into.mkdir(parents=True)
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def populate(src: Path, base: Path, routes: int, workload: str) -> str:
    base.mkdir(parents=True, exist_ok=True)
    url = f"sqlite://{base / 'state.db'}"
    subprocess.run(
        [sys.executable, "-c", POPULATE, url, str(routes), workload],
        env=side_env(src), check=True,
    )  # fmt: skip
    return url


def probe(src: Path, url: str, work: Path, last: str, callgrind: bool = False) -> dict:
    # as a module: the probe's own folder holds an ``http.py`` that would shadow the stdlib's
    cmd = [sys.executable, "-m", "routerbench.render_steps_probe", url, str(work), last]
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
    work.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        cmd, env=side_env(src), capture_output=True, text=True, check=False, cwd=work
    )
    if proc.returncode != 0:
        raise SystemExit(f"probe failed ({src}):\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if not out["shiftnet"].startswith(str(src)):
        raise SystemExit(f"probe imported shiftnet from {out['shiftnet']}, not from {src}")
    if callgrind:
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if not found:
            raise SystemExit(f"no callgrind total in:\n{proc.stderr[-2000:]}")
        out["instructions"] = int(found.group(1))
    return dict(out)


def cpu_rounds(sides: dict[str, tuple[Path, str]], work: Path, runs: int) -> dict[str, dict]:
    """Per side and step: every round's CPU seconds (rounds interleaved)."""
    got: dict[str, dict[str, list[float]]] = {s: {k: [] for k in STEPS} for s in sides}
    for i in range(runs):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for side in order:
            src, url = sides[side]
            res = probe(src, url, work / side, STEPS[-1])
            for step in STEPS:
                got[side][step].append(res["cpu_s"][step])
        print(f"  round {i + 1}/{runs} done (load {os.getloadavg()[0]:.2f})", flush=True)
    return got


def instruction_counts(sides: dict[str, tuple[Path, str]], work: Path) -> dict[str, dict]:
    """Per side and step: callgrind's instructions of that step alone."""
    out: dict[str, dict[str, int]] = {}
    for side, (src, url) in sides.items():
        totals = []
        for step in STEPS:
            totals.append(probe(src, url, work / side, step, callgrind=True)["instructions"])
            print(f"  callgrind {side} up to {step}: {totals[-1]:,}", flush=True)
        out[side] = {step: totals[i] - (totals[i - 1] if i else 0) for i, step in enumerate(STEPS)}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--before", default=DEFAULT_BEFORE, help="the other tree's commit")
    p.add_argument("--routes", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=7, help="interleaved rounds of CPU times")
    p.add_argument("--workload", default="own", choices=("own", "shared"))
    p.add_argument("--instructions", action="store_true", help="also count with callgrind")
    p.add_argument("--instruction-routes", type=int, default=2_000)
    args = p.parse_args()

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shiftnet-render-ab-") as tmp_name:
        tmp = Path(tmp_name)
        before_src = extract(args.before, tmp / "before")
        trees = {f"before ({args.before})": before_src, "this tree": REPO / "src"}
        print(f"render A/B: {args.routes} routes ({args.workload}), {args.runs} rounds", flush=True)
        sides = {
            name: (src, populate(src, tmp / f"store-{i}", args.routes, args.workload))
            for i, (name, src) in enumerate(trees.items())
        }
        cpu = cpu_rounds(sides, tmp / "work", args.runs)
        instr: dict[str, dict[str, int]] = {}
        if args.instructions:
            small = {
                name: (
                    src,
                    populate(src, tmp / f"small-{i}", args.instruction_routes, args.workload),
                )
                for i, (name, src) in enumerate(trees.items())
            }
            instr = instruction_counts(small, tmp / "work")
    load_after = os.getloadavg()

    names = list(trees)
    print(
        f"\nCPU seconds per step, median of {args.runs} interleaved rounds (range), "
        f"{args.routes} routes; load {load_before[0]:.2f} at the start, {load_after[0]:.2f} "
        "at the end (1 min)\n"
    )
    print(f"| step | {' | '.join(names)} | after / before |")
    print("|---|---:|---:|---:|")
    for step in STEPS:
        cells = []
        meds = []
        for name in names:
            values = cpu[name][step]
            med = statistics.median(values)
            meds.append(med)
            cells.append(f"{med:.3f} ({min(values):.3f}-{max(values):.3f})")
        ratio = meds[1] / meds[0] if meds[0] else float("nan")
        print(f"| {step} | {' | '.join(cells)} | {ratio:.2f} |")
    if instr:
        print(f"\ninstructions per step (callgrind), {args.instruction_routes} routes\n")
        print(f"| step | {' | '.join(names)} | after / before |")
        print("|---|---:|---:|---:|")
        for step in STEPS:
            a, b = (instr[n][step] for n in names)
            print(f"| {step} | {a:,} | {b:,} | {b / a if a else float('nan'):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
