"""NodePort connection setup latency in a kernel mode at 1 and 10,000 NodePort services.

    sudo .venv/bin/python bench/nodeport_latency.py [--modes nftables] [--sizes 1,10000]

Also run by ``bench/proxy_scale.py`` (its "node ports" table). Inside network
namespaces it creates (and deletes): a client connects to the node's address
at the node port of the first and of the last service, 200 times each; the
goal is flat latency (a node port is one map lookup whatever the count).
Each service has 10 endpoints; the first and last point at one real backend.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.support.proxy_netns import Topology  # noqa: E402

from shiftnet.api import Endpoints, Service  # noqa: E402
from shiftnet.proxy.changes import ProxyChanges  # noqa: E402
from shiftnet.proxy.kernel import KernelConfig, KernelProxier  # noqa: E402

ENDPOINTS = 10
FIRST_NODE_PORT = 20000  # 10,000 services need more than the default range's 2,768 ports
NODE = "10.200.0.1"  # the node's address on the client's link (tests/support/proxy_netns.py)
CONNECTS = 200


def node_port_objects(n: int, real_backend: str) -> tuple[dict, dict]:
    svcs: dict[tuple[str, str], Service] = {}
    eps: dict[tuple[str, str], Endpoints] = {}
    for i in range(n):
        name = f"np-{i:05d}"
        svcs[("bench", name)] = Service.model_validate(
            {
                "metadata": {"name": name, "namespace": "bench"},
                "spec": {
                    "type": "NodePort",
                    "clusterIP": f"172.30.{i // 250}.{i % 250 + 1}",
                    "ports": [{"name": "http", "port": 80, "nodePort": FIRST_NODE_PORT + i}],
                },
            }
        )
        if i in (0, n - 1):
            addrs = [{"ip": real_backend}]
        else:
            addrs = [
                {
                    "ip": f"10.{100 + (i * ENDPOINTS + j) // 62500}."
                    f"{(i * ENDPOINTS + j) // 250 % 250}.{(i * ENDPOINTS + j) % 250 + 1}"
                }
                for j in range(ENDPOINTS)
            ]
        eps[("bench", name)] = Endpoints.model_validate(
            {
                "metadata": {"name": name, "namespace": "bench"},
                "subsets": [{"addresses": addrs, "ports": [{"name": "http", "port": 8080}]}],
            }
        )
    return svcs, eps


def connect_latency(topo: Topology, port: int) -> list[float]:
    out = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            topo.client,
            sys.executable,
            "-m",
            "tests.support.proxy_peers",
            "latency",
            NODE,
            str(port),
            str(CONNECTS),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    ).stdout
    return sorted(json.loads(out))


async def node_port_case(mode: str, n: int, topo: Topology, real_backend: str) -> dict:
    svcs, eps = node_port_objects(n, real_backend)
    changes = ProxyChanges()
    for key in svcs:
        changes.mark(*key)
    table, _ = changes.take(lambda ns, nm: svcs.get((ns, nm)), lambda ns, nm: eps.get((ns, nm)))
    kernel = KernelProxier(KernelConfig(mode=mode, netns=topo.node))
    try:
        start = time.perf_counter()
        await kernel.sync(table, None)
        result: dict = {
            "mode": mode,
            "services": n,
            "full_sync_s": time.perf_counter() - start,
            "loadavg_1m": os.getloadavg()[0],
        }
        for label, idx in (("first", 0), ("last", n - 1)):
            lat = connect_latency(topo, FIRST_NODE_PORT + idx)
            result[f"{label}_p50_ms"] = statistics.median(lat)
            result[f"{label}_p99_ms"] = lat[int(len(lat) * 0.99) - 1]
        return result
    finally:
        await kernel.cleanup()
        kernel.close()


def nodeport_bench(sizes: list[int], modes: list[str]) -> list[dict]:
    """One topology, every (mode, size) case in turn; namespaces deleted at the end."""
    results = []
    topo = Topology(backends=1).create()
    try:
        topo.start_backends(8080)
        for mode in modes:
            for n in sizes:
                print(f"  node ports {mode} {n} services ...", file=sys.stderr, flush=True)
                results.append(asyncio.run(node_port_case(mode, n, topo, topo.backend_ip(1))))
    finally:
        topo.destroy()
    return results


def print_nodeports(rows: list[dict]) -> None:
    print(f"\nnode ports: connection setup to NODE:nodePort, {CONNECTS} connects each (ms)")
    print(
        f"{'mode':<10} {'services':>8} {'full sync s':>11} {'first p50/p99':>14} "
        f"{'last p50/p99':>14} {'load':>5}"
    )
    for r in rows:
        first = f"{r['first_p50_ms']:.2f}/{r['first_p99_ms']:.2f}"
        last = f"{r['last_p50_ms']:.2f}/{r['last_p99_ms']:.2f}"
        print(
            f"{r['mode']:<10} {r['services']:>8} {r['full_sync_s']:>11.2f} {first:>14} "
            f"{last:>14} {r['loadavg_1m']:>5.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--modes", default="nftables", help="kernel modes, comma-separated")
    ap.add_argument("--sizes", default="1,10000", help="NodePort service counts")
    ap.add_argument("--json", default="bench/results/nodeport_latency.json")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = nodeport_bench(sizes, args.modes.split(","))
    print_nodeports(rows)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"command": " ".join(sys.argv), "nodeports": rows}, indent=2) + "\n"
    )
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
