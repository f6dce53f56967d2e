#!/usr/bin/env python3
"""Queries per second of shiftnet's cluster DNS next to Unbound, with dnsperf.

One run: a tmp SQLite store gets N ClusterIP services (with named ports) and
their Endpoints; ``shiftnet dns`` serves them twice (as the standalone
command runs by default, and with ``--metrics-listen`` as ``shiftnet up`` runs
it, which counts every query for CoreDNS's series); Unbound serves the same
names from a static ``local-zone``. Each server is pinned to one core, dnsperf to
the other, and asked the service A names (answers), SRV at the service names,
PTR of the ClusterIPs, pod records (``a-b-c-d.<ns>.pod.<zone>``) and names
that do not exist (NXDOMAIN). Prints a table and writes JSON.

    .venv/bin/python bench/dns_qps.py [--services 1000] [--seconds 10] [--rounds 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = "cluster.local"


def free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind(("127.0.0.1", 0))
            port = u.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                try:
                    t.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port")


def services(n: int) -> list[tuple[str, str, str]]:
    """(namespace, name, clusterIP) for n services over 10 namespaces."""
    out = []
    for i in range(n):
        ns = f"bench-{i % 10}"
        out.append((ns, f"svc-{i}", f"127.30.{i // 250}.{i % 250 + 1}"))
    return out


async def seed_store(url: str, svcs: list[tuple[str, str, str]]) -> None:
    from shiftnet.api import Endpoints, Service
    from shiftnet.client import Client
    from shiftnet.store import open_store

    store = open_store(url)
    client = Client(store)
    for ns, name, ip in svcs:
        await client.create(
            Service.model_validate(
                {
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {
                        "clusterIP": ip,
                        "selector": {"app": name},
                        "ports": [{"name": "http", "port": 80}],
                    },
                }
            )
        )
        await client.create(
            Endpoints.model_validate(
                {
                    "metadata": {"name": name, "namespace": ns},
                    "subsets": [
                        {
                            "addresses": [{"ip": "127.10.0.2"}],
                            "ports": [{"name": "http", "port": 8080}],
                        }
                    ],
                }
            )
        )
    await store.close()


def wait_dns(port: int, timeout: float = 20.0) -> None:
    """Until the server on ``port`` answers dns-version TXT (or any query)."""
    import dns.message
    import dns.query

    deadline = time.monotonic() + timeout
    q = dns.message.make_query(f"dns-version.{DOMAIN}", "TXT")
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            dns.query.udp(q, "127.0.0.1", port=port, timeout=0.3)
            return
        time.sleep(0.1)
    raise RuntimeError(f"no DNS server answered on 127.0.0.1:{port}")


def pod_ip(cluster_ip: str) -> str:
    """A pod address per service (127.30.x.y -> 127.10.x.y), for the pod-record names."""
    return cluster_ip.replace("127.30.", "127.10.", 1)


def reverse(ip: str) -> str:
    return ".".join(reversed(ip.split("."))) + ".in-addr.arpa"


def unbound_conf(tmp: Path, port: int, svcs: list[tuple[str, str, str]]) -> Path:
    lines = [
        "server:",
        "  interface: 127.0.0.1",
        f"  port: {port}",
        "  do-ip6: no",
        "  num-threads: 1",
        "  do-daemonize: no",
        '  chroot: ""',
        '  username: ""',
        f'  directory: "{tmp}"',
        f'  pidfile: "{tmp}/unbound.pid"',
        "  use-syslog: no",
        f'  logfile: "{tmp}/unbound.log"',
        "  verbosity: 0",
        "  access-control: 127.0.0.0/8 allow",
        '  module-config: "iterator"',
        "  so-rcvbuf: 4m",
        f'  local-zone: "{DOMAIN}." static',
    ]
    for ns, name, ip in svcs:
        fqdn = f"{name}.{ns}.svc.{DOMAIN}."
        lines.append(f'  local-data: "{fqdn} 5 IN A {ip}"')
        lines.append(f'  local-data: "{fqdn} 5 IN SRV 0 100 80 {fqdn}"')
        lines.append(f'  local-data-ptr: "{ip} 5 {fqdn}"')
        pod = pod_ip(ip)
        lines.append(f'  local-data: "{pod.replace(".", "-")}.{ns}.pod.{DOMAIN}. 5 IN A {pod}"')
    lines += ["remote-control:", "  control-enable: no"]
    path = tmp / "unbound.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def dnsperf(
    port: int, datafile: Path, seconds: int, cpu: str, extra: tuple[str, ...] = ()
) -> dict[str, float]:
    cmd = [
        "taskset", "-c", cpu,
        "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", str(datafile),
        "-l", str(seconds), "-c", "4", "-q", "200", "-t", "2", *extra,
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    def grab(pattern: str) -> float:
        m = re.search(pattern, out)
        return float(m.group(1)) if m else float("nan")

    return {
        "qps": grab(r"Queries per second:\s+([\d.]+)"),
        "sent": grab(r"Queries sent:\s+(\d+)"),
        "completed": grab(r"Queries completed:\s+(\d+)"),
        "lost": grab(r"Queries lost:\s+(\d+)"),
        "avg_latency_ms": grab(r"Average Latency \(s\):\s+([\d.]+)") * 1000,
    }


def zone_build_seconds(svcs: list[tuple[str, str, str]]) -> float:
    """Best of 3: how long one full zone rebuild takes for these services."""
    from shiftnet.api import Service
    from shiftnet.dns.zone import ZoneConfig, build_zone

    objs = [
        Service.model_validate(
            {
                "metadata": {"name": name, "namespace": ns},
                "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": 80}]},
            }
        )
        for ns, name, ip in svcs
    ]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        build_zone(objs, [], ZoneConfig())
        best = min(best, time.perf_counter() - start)
    return best


def write_queries(
    tmp: Path, svcs: list[tuple[str, str, str]]
) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """Workload label -> (dnsperf data file, extra dnsperf flags)."""
    names = tmp / "names.txt"
    names.write_text("".join(f"{n}.{ns}.svc.{DOMAIN} A\n" for ns, n, _ in svcs))
    srv = tmp / "srv.txt"
    srv.write_text("".join(f"{n}.{ns}.svc.{DOMAIN} SRV\n" for ns, n, _ in svcs))
    ptr = tmp / "ptr.txt"
    ptr.write_text("".join(f"{reverse(ip)} PTR\n" for _, _, ip in svcs))
    pods = tmp / "pods.txt"
    pods.write_text(
        "".join(f"{pod_ip(ip).replace('.', '-')}.{ns}.pod.{DOMAIN} A\n" for ns, _, ip in svcs)
    )
    nx = tmp / "nxdomain.txt"
    nx.write_text("".join(f"missing-{n}.{ns}.svc.{DOMAIN} A\n" for ns, n, _ in svcs))
    return {
        "cluster names (A)": (names, ()),
        "cluster names, EDNS": (names, ("-e",)),
        "SRV (service name)": (srv, ()),
        "PTR (ClusterIP)": (ptr, ()),
        "pod records (A)": (pods, ()),
        "NXDOMAIN": (nx, ()),
    }


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--services", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; best is kept")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "dns_qps.json"))
    args = ap.parse_args()
    for tool in ("dnsperf", "unbound", "taskset"):
        if shutil.which(tool) is None:
            print(f"error: {tool} is not installed", file=sys.stderr)
            return 2

    svcs = services(args.services)
    load_before = os.getloadavg()
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="sn-dnsbench-") as tmpdir:
        tmp = Path(tmpdir)
        url = f"sqlite://{tmp}/state.db"
        asyncio.run(seed_store(url, svcs))
        queries = write_queries(tmp, svcs)

        port, mport = free_port(), free_port()
        env = dict(os.environ, SHIFTNET_HOME=str(tmp), SHIFTNET_STORE=url)
        shift = subprocess.Popen(
            ["taskset", "-c", args.server_cpu, sys.executable, "-m", "shiftnet.cli.main",
             "dns", "--listen", f"127.0.0.1:{port}"],
            env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        # as `shiftnet up` runs it: /metrics served, so every query is counted
        metered = subprocess.Popen(
            ["taskset", "-c", args.server_cpu, sys.executable, "-m", "shiftnet.cli.main",
             "dns", "--listen", f"127.0.0.1:{mport}",
             "--metrics-listen", f"127.0.0.1:{free_port()}"],
            env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        uport = free_port()
        conf = unbound_conf(tmp, uport, svcs)
        unbound = subprocess.Popen(
            ["taskset", "-c", args.server_cpu, "unbound", "-d", "-c", str(conf)],
            stdout=subprocess.DEVNULL,
        )
        try:
            wait_dns(port)
            wait_dns(mport)
            wait_dns(uport)
            # Rounds alternate between the servers so a noisy neighbour hurts both
            # alike; each cell keeps its best round.
            for _ in range(args.rounds):
                for server, p in (("shiftnet", port), ("metrics", mport), ("unbound", uport)):
                    for label, (path, extra) in queries.items():
                        run = dnsperf(p, path, args.seconds, args.client_cpu, extra)
                        best = results.setdefault(server, {}).get(label)
                        if best is None or run["qps"] > best["qps"]:
                            results[server][label] = run
        finally:
            stop(shift)
            stop(metered)
            stop(unbound)

    build = zone_build_seconds(svcs)
    header = f"{'workload':<20} {'shiftnet q/s':>13} {'+metrics q/s':>13} {'unbound q/s':>13}"
    header += f" {'ratio':>7} {'shiftnet lat ms':>16} {'unbound lat ms':>15}"
    print(
        f"dnsperf, {args.services} services, best of {args.rounds} x {args.seconds}s, "
        "each server pinned to one core, dnsperf to another; "
        f"load average before: {load_before[0]:.2f}"
    )
    print(header)
    print("-" * len(header))
    for label in queries:
        s, m, u = (results[k][label] for k in ("shiftnet", "metrics", "unbound"))
        print(
            f"{label:<20} {s['qps']:>13.0f} {m['qps']:>13.0f} {u['qps']:>13.0f}"
            f" {s['qps'] / u['qps']:>7.2f}"
            f" {s['avg_latency_ms']:>16.3f} {u['avg_latency_ms']:>15.3f}"
        )
    print(f"full zone rebuild for {args.services} services: {build * 1000:.1f} ms")
    out = {
        "benchmark": "dns_qps",
        "zone_build_ms": round(build * 1000, 2),
        "services": args.services,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_before": list(load_before),
        },
        "dnsperf": "-c 4 -q 200 -t 2, client pinned to its own core",
        "results": results,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
