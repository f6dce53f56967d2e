"""Service proxy benchmark: kernel-mode sync times and connection setup, user-space throughput.

    sudo .venv/bin/python bench/proxy_scale.py [--quick] [--json bench/results/proxy_scale.json]

Kernel modes run inside network namespaces this script creates (and deletes):
full sync at 1,000 and 10,000 services x 10 endpoints, one-service change at
10,000 (through ProxyChanges, so the diff is included), for nftables and
iptables; connection setup latency from a client namespace to the first and
the 10,000th service. User space: wrk through `shiftnet proxy --mode
userspace` vs straight to the backend (nginx) vs HAProxy in TCP mode, same
traffic, same machine, one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.nodeport_latency import nodeport_bench, print_nodeports  # noqa: E402
from tests.support.proxy_netns import Topology  # noqa: E402

from shiftnet.api import Endpoints, Service  # noqa: E402
from shiftnet.proxy.changes import ProxyChanges  # noqa: E402
from shiftnet.proxy.kernel import KernelConfig, KernelProxier  # noqa: E402

ENDPOINTS = 10
CHANGES = 20
# user space: the proxy under test (ours, or HAProxy with one thread) on CPU 0; the load
# generator and the backend on the other CPU, so both proxies get the same single core
PIN_PROXY = ["taskset", "-c", "0"] if (os.cpu_count() or 1) >= 2 else []
PIN_LOAD = ["taskset", "-c", "1"] if (os.cpu_count() or 1) >= 2 else []


def vip(i: int) -> str:
    return f"172.30.{i // 250}.{i % 250 + 1}"


def objects(n: int, real_backend: str | None = None) -> tuple[dict, dict]:
    """n Services x 10 endpoints; services 0 and n-1 point at ``real_backend`` only."""
    svcs: dict[tuple[str, str], Service] = {}
    eps: dict[tuple[str, str], Endpoints] = {}
    for i in range(n):
        name = f"svc-{i:05d}"
        svcs[("bench", name)] = Service.model_validate(
            {
                "metadata": {"name": name, "namespace": "bench"},
                "spec": {"clusterIP": vip(i), "ports": [{"name": "http", "port": 80}]},
            }
        )
        if real_backend and i in (0, n - 1):
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


async def kernel_case(
    mode: str, n: int, topo: Topology, real_backend: str, backend: str = "nft"
) -> dict:
    """Full sync, then one-service changes. ``backend``: nftables "nft" (map flip) or
    "text"; iptables "legacy" / "nft" (partial restores) or "legacy-full" / "nft-full"
    (every change a full restore: the layout before partial syncs)."""
    full_rewrite = backend.endswith("-full")
    tools = backend.removesuffix("-full")
    svcs, eps = objects(n, real_backend)
    changes = ProxyChanges()
    for key in svcs:
        changes.mark(*key)
    flip = backend != "text"
    kernel = KernelProxier(
        KernelConfig(
            mode=mode,
            netns=topo.node,
            iptables_backend=tools if mode == "iptables" else "nft",
            iptables_sync_period=1e9,  # no periodic full sync in the middle of the samples
            nft_flip=flip,
        )
    )
    if mode == "nftables":  # open the libnftables session outside the timed part
        await kernel.apply_nft("")
    t0 = time.perf_counter()
    table, diff = changes.take(lambda ns, nm: svcs.get((ns, nm)), lambda ns, nm: eps.get((ns, nm)))
    t1 = time.perf_counter()
    c1 = cpu_seconds()
    await kernel.sync(table, None)
    t2 = time.perf_counter()
    label = _label(mode, n, backend)
    result = {
        "mode": label,
        "services": n,
        "model_s": t1 - t0,
        "full_sync_s": t2 - t1,
        "full_sync_cpu_s": cpu_seconds() - c1,
        "loadavg_1m": os.getloadavg()[0],
        "full_sync_steps_s": dict(kernel.last_full_steps) if mode == "nftables" else {},
    }
    if mode == "iptables":
        result.update(nat_table_size(topo.node, tools))
    # one-service changes: one endpoint of one service replaced, CHANGES times (different
    # services); the median is reported, the first one (right after the full load) too
    rounds = 3 if full_rewrite else CHANGES
    samples: list[tuple[float, float, float, float]] = []
    for r in range(rounds):
        key = ("bench", f"svc-{(n // 2 + r * 7) % n:05d}")
        eps[key].subsets[0].addresses[0].ip = f"10.99.99.{r + 1}"
        t3 = time.perf_counter()
        changes.mark(*key)
        table, diff = changes.take(
            lambda ns, nm: svcs.get((ns, nm)), lambda ns, nm: eps.get((ns, nm))
        )
        t4 = time.perf_counter()
        c4 = cpu_seconds()
        await kernel.sync(table, None if full_rewrite else diff)
        t5 = time.perf_counter()
        assert kernel.last_kind == ("full" if full_rewrite else "partial"), kernel.last_kind
        samples.append((t4 - t3, t5 - t4, t5 - t3, cpu_seconds() - c4))

    def med(i: int) -> float:
        return statistics.median(s[i] for s in samples)

    result.update(
        change_rounds=rounds,
        change_model_s=med(0),
        change_apply_s=med(1),
        change_total_s=med(2),
        change_apply_cpu_s=med(3),
        change_first_total_s=samples[0][2],
        change_max_total_s=max(s[2] for s in samples),
    )
    if n >= 10000:
        for label, idx in (("first", 0), ("last", n - 1)):
            lat = json.loads(
                subprocess.run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        topo.client,
                        sys.executable,
                        "-m",
                        "tests.support.proxy_peers",
                        "latency",
                        vip(idx),
                        "80",
                        "200",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=ROOT,
                    env=dict(os.environ, PYTHONPATH=str(ROOT)),
                ).stdout
            )
            lat.sort()
            result[f"connect_{label}_p50_ms"] = statistics.median(lat)
            result[f"connect_{label}_p99_ms"] = lat[int(len(lat) * 0.99) - 1]
    await kernel.cleanup()
    kernel.close()
    return result


# run inside the node namespace: IPT_SO_GET_INFO (64) of the legacy nat table, whose
# size is what every legacy restore copies out of the kernel and back
_NAT_INFO = """
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
buf, size = ctypes.create_string_buffer(b"nat", 84), ctypes.c_uint(84)
if libc.getsockopt(s.fileno(), socket.IPPROTO_IP, 64, buf, ctypes.byref(size)) != 0:
    raise SystemExit(f"IPT_SO_GET_INFO: errno {ctypes.get_errno()}")
print(*struct.unpack_from("II", buf.raw, 76))
"""


def nat_table_size(netns: str, tools: str) -> dict:
    """Rules in our nat table (iptables-save) and, for the legacy tools, the kernel's
    entries (rules plus two per chain) and bytes."""
    save = subprocess.run(
        ["ip", "netns", "exec", netns, f"iptables-{tools}-save", "-t", "nat"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out = {"nat_rules": sum(1 for line in save.splitlines() if line.startswith("-A "))}
    if tools == "legacy":
        info = subprocess.run(
            ["ip", "netns", "exec", netns, sys.executable, "-c", _NAT_INFO],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        out.update(nat_entries=int(info[0]), nat_bytes=int(info[1]))
    return out


def _label(mode: str, n: int, backend: str) -> str:
    if mode == "nftables":
        return "nft-text" if backend == "text" else "nftables"
    return f"ipt-{backend}"


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and its waited-for children, user + system.

    Reported next to wall time because other work on a shared machine stretches
    wall time; CPU time is what the sync itself costs.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def kernel_bench(sizes: list[int], modes: list[str]) -> list[dict]:
    results = []
    topo = Topology(backends=1).create()
    try:
        topo.start_backends(8080)
        real = topo.backend_ip(1)
        cases = [("nftables", n, "nft") for n in sizes]
        # the previous full-sync path (whole table as nft text), for the before/after
        cases += [("nftables", n, "text") for n in sizes]
        cases += [("iptables", n, "legacy") for n in sizes]
        cases += [("iptables", n, "nft") for n in sizes]
        # every change a full restore (what the iptables mode did before partial syncs)
        cases += [("iptables", n, "legacy-full") for n in sizes]
        cases += [("iptables", n, "nft-full") for n in sizes]
        cases = [c for c in cases if _label(*c) in modes]
        for mode, n, backend in cases:
            print(f"  kernel {mode}/{backend} {n} services ...", file=sys.stderr, flush=True)
            results.append(asyncio.run(kernel_case(mode, n, topo, real, backend)))
    finally:
        topo.destroy()
    return results


# ---------------------------------------------------------------- user space


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{host}:{port} never opened")


def wrk(url: str, seconds: int, connections: int) -> dict:
    out = subprocess.run(
        [
            *PIN_LOAD,
            "wrk",
            "-t",
            "1",
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "--latency",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
    return {
        "rps": rps,
        "requests": requests,
        "p99_ms": float(p99.group(1)) * scale,
        "errors": errors.group(0) if errors else "",
    }


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (and its waited-for children) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


USERSPACE_PATHS = ("direct", "haproxy_tcp", "haproxy_tcp_2threads", "userspace")
# bulk: an 8 MiB file over 4 connections, HAProxy (1 thread) against ours, CPU per GiB
BULK_PATHS = ("haproxy_tcp", "userspace")
BULK_BYTES = 8 * 2**20
BULK_CONNECTIONS = 4


def userspace_bench(seconds: int, connections: int, rounds: int = 5) -> dict:
    """wrk through each path, ``rounds`` times interleaved (direct, HAProxy, HAProxy 2
    threads, ours; then again), so every path sees the same share of whatever else the
    machine is doing. Per path: median req/s and p99, and the proxy's CPU per request
    (from /proc, load-independent); the ratio is the median of the per-round ratios."""
    work = Path(tempfile.mkdtemp(prefix="sn-proxy-bench-"))
    www = Path(tempfile.mkdtemp(prefix="sn-proxy-bench-www-"))  # nginx's worker reads it
    www.chmod(0o755)
    (www / "bulk.bin").write_bytes(os.urandom(BULK_BYTES))
    (www / "bulk.bin").chmod(0o644)
    procs: list[subprocess.Popen] = []
    try:
        backend_port = free_port()
        (work / "nginx.conf").write_text(
            f"worker_processes 1; daemon off; pid {work}/nginx.pid; error_log stderr error;\n"
            "events { worker_connections 4096; }\n"
            "http { access_log off; keepalive_requests 1000000; sendfile on;\n"
            f"  server {{ listen 127.0.0.1:{backend_port}; root {www};\n"
            "    location = / { return 200 'ok'; } } }\n"
        )
        procs.append(
            subprocess.Popen([*PIN_LOAD, "nginx", "-c", str(work / "nginx.conf"), "-p", str(work)])
        )
        wait_port("127.0.0.1", backend_port)

        haproxy_ports = {}
        pids: dict[str, int] = {}
        for label, threads in (("haproxy_tcp", 1), ("haproxy_tcp_2threads", 2)):
            port = haproxy_ports[label] = free_port()
            cfg = work / f"{label}.cfg"
            cfg.write_text(
                f"global\n  maxconn 4000\n  nbthread {threads}\n"
                "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n"
                "  timeout server 60s\n"
                f"listen svc\n  bind 127.0.0.1:{port}\n  balance roundrobin\n"
                f"  server b1 127.0.0.1:{backend_port}\n"
            )
            pin = PIN_PROXY if threads == 1 else []
            procs.append(subprocess.Popen([*pin, "haproxy", "-f", str(cfg)]))
            pids[label] = procs[-1].pid
            wait_port("127.0.0.1", port)

        store = f"sqlite:///{work}/state.db"
        cluster_ip, svc_port = "127.30.250.1", free_port("127.30.250.1")
        asyncio.run(_write_service(store, cluster_ip, svc_port, backend_port))
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        procs.append(
            subprocess.Popen(
                [
                    *PIN_PROXY,
                    sys.executable,
                    "-m",
                    "shiftnet.cli.main",
                    "--store",
                    store,
                    "--state-dir",
                    str(work),
                    "proxy",
                    "--mode",
                    "userspace",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
            )
        )
        pids["userspace"] = procs[-1].pid
        wait_port(cluster_ip, svc_port)

        urls = {
            "direct": f"http://127.0.0.1:{backend_port}/",
            "haproxy_tcp": f"http://127.0.0.1:{haproxy_ports['haproxy_tcp']}/",
            "haproxy_tcp_2threads": f"http://127.0.0.1:{haproxy_ports['haproxy_tcp_2threads']}/",
            "userspace": f"http://{cluster_ip}:{svc_port}/",
        }
        runs: dict[str, list[dict]] = {label: [] for label in USERSPACE_PATHS}
        for url in urls.values():
            wrk(url, 1, connections)  # warm-up
        loads = []
        for _ in range(rounds):
            loads.append(os.getloadavg()[0])
            for label in USERSPACE_PATHS:
                pid = pids.get(label)
                before = process_cpu_seconds(pid) if pid else 0.0
                run = wrk(urls[label], seconds, connections)
                if pid:
                    cpu = process_cpu_seconds(pid) - before
                    run["cpu_us_per_request"] = cpu / max(1, run["requests"]) * 1e6
                runs[label].append(run)
        bulk: dict[str, list[dict]] = {label: [] for label in BULK_PATHS}
        for _ in range(rounds):
            for label in BULK_PATHS:
                pid = pids[label]
                before = process_cpu_seconds(pid)
                run = wrk(urls[label] + "bulk.bin", seconds, BULK_CONNECTIONS)
                cpu = process_cpu_seconds(pid) - before
                mib = run["requests"] * BULK_BYTES / 2**20
                run["mib_per_s"] = run["rps"] * BULK_BYTES / 2**20
                run["cpu_ms_per_gib"] = cpu / max(mib, 1) * 1024 * 1000
                bulk[label].append(run)
        res: dict = {"rounds": rounds, "seconds": seconds, "loadavg_1m": loads, "runs": runs}
        res["bulk"] = {
            label: {
                "mib_per_s": statistics.median(r["mib_per_s"] for r in rs),
                "cpu_ms_per_gib": statistics.median(r["cpu_ms_per_gib"] for r in rs),
            }
            for label, rs in bulk.items()
        }
        res["bulk_runs"] = bulk
        for label, rs in runs.items():
            res[label] = {
                "rps": statistics.median(r["rps"] for r in rs),
                "p99_ms": statistics.median(r["p99_ms"] for r in rs),
                "errors": "; ".join(r["errors"] for r in rs if r["errors"]),
            }
            if "cpu_us_per_request" in rs[0]:
                res[label]["cpu_us_per_request"] = statistics.median(
                    r["cpu_us_per_request"] for r in rs
                )

        def paired(other: str, key: str = "rps") -> float:
            return statistics.median(
                u[key] / h[key] for u, h in zip(runs["userspace"], runs[other], strict=True)
            )

        res["ratio_userspace_vs_haproxy"] = paired("haproxy_tcp")
        res["ratio_userspace_vs_haproxy_2threads"] = paired("haproxy_tcp_2threads")
        res["ratio_p99_userspace_vs_haproxy"] = paired("haproxy_tcp", "p99_ms")
        res["ratio_cpu_per_request_userspace_vs_haproxy"] = (
            res["userspace"]["cpu_us_per_request"] / res["haproxy_tcp"]["cpu_us_per_request"]
        )
        return res
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(www, ignore_errors=True)


async def _write_service(store_url: str, ip: str, port: int, backend_port: int) -> None:
    from shiftnet.client import Client
    from shiftnet.store import open_store

    store = open_store(store_url)
    client = Client(store)
    await client.create(
        Service.model_validate(
            {
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": port}]},
            }
        )
    )
    await client.create(
        Endpoints.model_validate(
            {
                "metadata": {"name": "web", "namespace": "default"},
                "subsets": [
                    {
                        "addresses": [{"ip": "127.0.0.1"}],
                        "ports": [{"name": "http", "port": backend_port}],
                    }
                ],
            }
        )
    )
    await store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 and 1,000 services, 3 s wrk runs")
    ap.add_argument("--json", default="bench/results/proxy_scale.json")
    ap.add_argument("--skip-kernel", action="store_true")
    ap.add_argument(
        "--modes",
        default="nftables,nft-text,ipt-legacy,ipt-nft,ipt-legacy-full,ipt-nft-full",
        help="kernel cases to run (comma-separated; nft-text: nftables full syncs as one text "
        "transaction, the pre-flip path; ipt-*-full: every iptables change a full restore)",
    )
    ap.add_argument("--skip-userspace", action="store_true")
    ap.add_argument(
        "--nodeport-modes",
        default="nftables",
        help="kernel modes of the node port latency table (bench/nodeport_latency.py); "
        "'none' skips it",
    )
    ap.add_argument(
        "--rounds", type=int, default=5, help="user space: interleaved wrk rounds per path"
    )
    args = ap.parse_args()
    sizes = [100, 1000] if args.quick else [1000, 10000]
    out: dict = {"command": " ".join(sys.argv), "machine": f"{os.cpu_count()} cpus"}
    if not args.skip_kernel:
        out["kernel"] = kernel_bench(sizes, args.modes.split(","))
    if not args.skip_userspace:
        out["userspace"] = userspace_bench(3 if args.quick else 10, 50, args.rounds)
    if args.nodeport_modes != "none":
        out["nodeports"] = nodeport_bench(
            [1, 1000 if args.quick else 10000], args.nodeport_modes.split(",")
        )
    print_table(out)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {args.json}")


def print_table(out: dict) -> None:
    if "kernel" in out:
        print(
            "\nkernel modes (10 endpoints per service; 1-svc change: median of "
            f"{CHANGES} (ipt-*-full: 3) changes, then the first one and the slowest)"
        )
        print(
            f"{'mode':<15} {'services':>8} {'model s':>7} {'full sync s':>11} {'(cpu s)':>7} "
            f"{'1-svc chg ms':>12} {'(apply ms)':>10} {'(apply cpu)':>11} {'1st/max ms':>13} "
            f"{'conn 1st p50/p99':>16} {'conn last p50/p99':>17} {'load':>5}"
        )
        for r in out["kernel"]:
            first = (
                f"{r['connect_first_p50_ms']:.2f}/{r['connect_first_p99_ms']:.2f}"
                if "connect_first_p50_ms" in r
                else "-"
            )
            last = (
                f"{r['connect_last_p50_ms']:.2f}/{r['connect_last_p99_ms']:.2f}"
                if "connect_last_p50_ms" in r
                else "-"
            )
            print(
                f"{r['mode']:<15} {r['services']:>8} {r['model_s']:>7.2f} "
                f"{r['full_sync_s']:>11.2f} {r['full_sync_cpu_s']:>7.2f} "
                f"{r['change_total_s'] * 1000:>12.1f} {r['change_apply_s'] * 1000:>10.1f} "
                f"{r['change_apply_cpu_s'] * 1000:>11.1f} "
                f"{r['change_first_total_s'] * 1000:>6.0f}/{r['change_max_total_s'] * 1000:<6.0f} "
                f"{first:>16} {last:>17} {r['loadavg_1m']:>5.1f}"
            )
        sized = [r for r in out["kernel"] if "nat_rules" in r]
        if sized:
            print("\niptables nat table after the full sync (legacy: kernel entries and bytes)")
            print(
                f"{'mode':<15} {'services':>8} {'rules':>8} {'entries':>8} {'MB':>6} {'B/svc':>6}"
            )
        for r in sized:
            mb = f"{r['nat_bytes'] / 1e6:.1f}" if "nat_bytes" in r else "-"
            per = f"{r['nat_bytes'] / r['services']:.0f}" if "nat_bytes" in r else "-"
            print(
                f"{r['mode']:<15} {r['services']:>8} {r['nat_rules']:>8} "
                f"{r.get('nat_entries', '-'):>8} {mb:>6} {per:>6}"
            )
    if "userspace" in out:
        print_userspace(out["userspace"])
    if "nodeports" in out:
        print_nodeports(out["nodeports"])


def print_userspace(u: dict) -> None:
    print(
        f"\nuser space: wrk -t1 -c50 keep-alive, HTTP 'ok' from nginx; proxy on CPU 0, "
        f"wrk + nginx on CPU 1 (HAProxy 2 threads: unpinned); {u['rounds']} interleaved "
        f"rounds of {u['seconds']} s, medians; load {min(u['loadavg_1m']):.1f}-"
        f"{max(u['loadavg_1m']):.1f}"
    )
    print(f"{'path':<22} {'req/s':>10} {'p99 ms':>8} {'proxy cpu us/req':>16}")
    for label in USERSPACE_PATHS:
        cpu = u[label].get("cpu_us_per_request")
        cpu_text = f"{cpu:.1f}" if cpu is not None else "-"
        print(f"{label:<22} {u[label]['rps']:>10.0f} {u[label]['p99_ms']:>8.2f} {cpu_text:>16}")
    print(f"userspace / haproxy_tcp (nbthread 1) = {u['ratio_userspace_vs_haproxy']:.2f}")
    print(f"userspace / haproxy_tcp (nbthread 2) = {u['ratio_userspace_vs_haproxy_2threads']:.2f}")
    print(f"p99 userspace / haproxy_tcp = {u['ratio_p99_userspace_vs_haproxy']:.2f}")
    print(
        "cpu per request userspace / haproxy_tcp = "
        f"{u['ratio_cpu_per_request_userspace_vs_haproxy']:.2f}"
    )
    if "bulk" in u:
        print(f"\nbulk: wrk -c{BULK_CONNECTIONS} fetching {BULK_BYTES >> 20} MiB, medians")
        print(f"{'path':<22} {'MiB/s':>10} {'proxy cpu ms/GiB':>16}")
        for label, b in u["bulk"].items():
            print(f"{label:<22} {b['mib_per_s']:>10.0f} {b['cpu_ms_per_gib']:>16.0f}")


if __name__ == "__main__":
    main()
