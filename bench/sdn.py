#!/usr/bin/env python3
"""SDN mode: how fast a pod gets its network, and what the overlay costs in throughput (root).

Two measurements, side by side in one run, on a two-node lab underlay (network
namespaces on a switch namespace, as ``shiftnet lab`` builds it):

* **Pod network setup**: N pods attached one after the other through the node
  agent's own code path (``SdnNetwork.setup_pod``: netns, veth pair, bridge
  port, address, route, all over netlink), then torn down. Reference: the same
  wiring done the way a shell script would, one ``ip`` command per step.
  Target: p50 under 50 ms per pod.
* **TCP throughput pod → pod**: one stream for a few seconds, same node
  (veth → br0 → veth) vs across nodes (… br0 → vxlan0 → underlay → vxlan0 …),
  next to the underlay itself (node eth0 → node eth0, no overlay). Sender and
  receiver are small Python socket loops (1 MiB writes), the same for all three.

Prints a table and writes JSON.

    sudo .venv/bin/python bench/sdn.py [--pods 50] [--seconds 3] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from shiftnet.api import HostSubnet, ObjectMeta  # noqa: E402
from shiftnet.sdn.netlink import NodeNetworkDriver  # noqa: E402
from shiftnet.sdn.sdnmode import SdnNetwork  # noqa: E402
from shiftnet.sdn.topology import plan_node, pod_netns  # noqa: E402
from shiftnet.sdn.underlay import Underlay  # noqa: E402

CLUSTER = "10.1.0.0/16"
SERVICES = "172.30.0.0/16"
SUBNETS = ("10.1.0.0/24", "10.1.1.0/24")

RECEIVER = (
    "import socket,sys,time\n"
    "s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "s.bind((sys.argv[1],5201));s.listen();print('ready',flush=True)\n"
    "c,_=s.accept();buf=bytearray(1<<20);n=0;t0=time.monotonic()\n"
    "while True:\n"
    " k=c.recv_into(buf)\n"
    " if not k: break\n"
    " n+=k\n"
    "print(n/(time.monotonic()-t0))"
)
SENDER = (
    "import socket,sys,time\n"
    "s=socket.create_connection((sys.argv[1],5201));buf=b'x'*(1<<20)\n"
    "end=time.monotonic()+float(sys.argv[2])\n"
    "while time.monotonic()<end: s.sendall(buf)\n"
    "s.close()"
)


def ns_exec(ns: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def host_subnets(under: Underlay) -> list[HostSubnet]:
    out = []
    for i, subnet in enumerate(SUBNETS, start=1):
        m = under.node(i)
        out.append(
            HostSubnet(
                metadata=ObjectMeta(name=m.name), host=m.name, host_ip=m.host_ip, subnet=subnet
            )
        )
    return out


async def setup_pods(net: SdnNetwork, n: int) -> tuple[list[float], list[float]]:
    setup, teardown = [], []
    for i in range(n):
        t0 = time.perf_counter()
        await net.setup_pod("bench", f"p{i}", f"10.1.0.{i + 2}")
        setup.append(time.perf_counter() - t0)
    for i in range(n):
        t0 = time.perf_counter()
        await net.teardown_pod("bench", f"p{i}", f"10.1.0.{i + 2}")
        teardown.append(time.perf_counter() - t0)
    return setup, teardown


def shell_pods(node_ns: str, prefix: str, n: int) -> tuple[list[float], list[float]]:
    """The reference: one ``ip`` command per step, as a shell script would."""
    setup, teardown = [], []
    for i in range(n):
        pod, veth, ip = f"{prefix}-r{i}", f"vr{i}", f"10.1.1.{i + 2}"
        steps = [
            ["ip", "netns", "add", pod],
            [
                "ip",
                "-n",
                node_ns,
                "link",
                "add",
                veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                pod,
            ],
            ["ip", "-n", node_ns, "link", "set", veth, "master", "br0", "mtu", "1450", "up"],
            ["ip", "-n", pod, "link", "set", "lo", "up"],
            ["ip", "-n", pod, "addr", "add", f"{ip}/24", "dev", "eth0"],
            ["ip", "-n", pod, "link", "set", "eth0", "mtu", "1450", "up"],
            ["ip", "-n", pod, "route", "add", "default", "via", "10.1.1.1"],
        ]
        t0 = time.perf_counter()
        for argv in steps:
            subprocess.run(argv, check=True, capture_output=True)
        setup.append(time.perf_counter() - t0)
    for i in range(n):
        t0 = time.perf_counter()
        subprocess.run(["ip", "-n", node_ns, "link", "del", f"vr{i}"], check=True)
        subprocess.run(["ip", "netns", "del", f"{prefix}-r{i}"], check=True)
        teardown.append(time.perf_counter() - t0)
    return setup, teardown


def stream(rx_ns: str, rx_ip: str, tx_ns: str, seconds: float) -> float:
    """Bytes per second of one TCP stream from ``tx_ns`` to ``rx_ip`` in ``rx_ns``."""
    rx = subprocess.Popen(
        ns_exec(rx_ns, [sys.executable, "-c", RECEIVER, rx_ip]), stdout=subprocess.PIPE, text=True
    )
    try:
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        subprocess.run(
            ns_exec(tx_ns, [sys.executable, "-c", SENDER, rx_ip, str(seconds)]),
            check=True,
            timeout=seconds + 30,
        )
        return float(rx.stdout.readline())
    finally:
        rx.kill()
        rx.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "sdn.json"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/sdn.py needs root (network namespaces)", file=sys.stderr)
        return 2

    prefix = f"sn-b{uuid.uuid4().hex[:5]}"
    under = Underlay(prefix)
    try:
        nodes = under.up(2)
        subnets = host_subnets(under)
        for i, m in enumerate(nodes):
            plan = plan_node(
                node=m.name,
                host_ip=m.host_ip,
                subnet=SUBNETS[i],
                others=[(h.host, h.subnet, h.host_ip) for h in subnets],
                cluster_network=CLUSTER,
                service_network=SERVICES,
            )
            NodeNetworkDriver(m.netns).apply(plan)
        net = SdnNetwork(
            node=nodes[0].name,
            host_ip=nodes[0].host_ip,
            cluster_network=CLUSTER,
            service_network=SERVICES,
            netns=nodes[0].netns,
        )

        async def setup_all() -> tuple[list[float], list[float]]:
            await net.sync_node(subnets)
            await setup_pods(net, 1)  # warm-up (imports, first netlink sockets)
            return await setup_pods(net, args.pods)

        sdn_setup, sdn_teardown = asyncio.run(setup_all())
        ref_setup, ref_teardown = shell_pods(nodes[1].netns, prefix, args.pods)

        # throughput: two pods on node1, one on node2
        async def pods_for_stream() -> None:
            await net.setup_pod("bench", "tx", "10.1.0.100")
            await net.setup_pod("bench", "same", "10.1.0.101")
            far = SdnNetwork(
                node=nodes[1].name,
                host_ip=nodes[1].host_ip,
                cluster_network=CLUSTER,
                service_network=SERVICES,
                netns=nodes[1].netns,
            )
            await far.sync_node(subnets)
            await far.setup_pod("bench", "far", "10.1.1.100")

        asyncio.run(pods_for_stream())
        tx = pod_netns(nodes[0].name, "bench", "tx")
        cases = {
            "same node (veth→br0→veth)": (
                pod_netns(nodes[0].name, "bench", "same"),
                "10.1.0.101",
                tx,
            ),
            "across nodes (VXLAN)": (pod_netns(nodes[1].name, "bench", "far"), "10.1.1.100", tx),
            "underlay node→node (reference)": (nodes[1].netns, nodes[1].host_ip, nodes[0].netns),
        }
        rates: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.rounds):  # interleaved rounds: load changes hit every case alike
            for name, (rx_ns, rx_ip, tx_ns) in cases.items():
                rates[name].append(stream(rx_ns, rx_ip, tx_ns, args.seconds))
    finally:
        under.down()

    ms = 1000.0
    print(f"\nPod network setup, {args.pods} pods one after the other (ms per pod)")
    print(f"{'':34}{'p50':>8}{'p90':>8}{'max':>8}   teardown p50")
    for label, s, t in (
        ("shiftnet (netlink, pyroute2)", sdn_setup, sdn_teardown),
        ("reference: one `ip` per step", ref_setup, ref_teardown),
    ):
        print(
            f"{label:34}{pct(s, 0.5) * ms:8.1f}{pct(s, 0.9) * ms:8.1f}{max(s) * ms:8.1f}"
            f"   {pct(t, 0.5) * ms:8.1f}"
        )
    print(f"target: p50 < 50 ms → {'met' if pct(sdn_setup, 0.5) < 0.05 else 'NOT met'}")
    print(
        f"\nTCP throughput, one stream, {args.seconds:g}s x {args.rounds} rounds (Gbit/s, median)"
    )
    base = statistics.median(rates["underlay node→node (reference)"])
    for name, values in rates.items():
        med = statistics.median(values)
        print(f"{name:34}{med * 8 / 1e9:8.2f}   ({med / base:.0%} of underlay)")

    out = {
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
        "pods": args.pods,
        "setup_ms": {
            "shiftnet": {
                "p50": pct(sdn_setup, 0.5) * ms,
                "p90": pct(sdn_setup, 0.9) * ms,
                "max": max(sdn_setup) * ms,
                "teardown_p50": pct(sdn_teardown, 0.5) * ms,
            },
            "ip_commands": {
                "p50": pct(ref_setup, 0.5) * ms,
                "p90": pct(ref_setup, 0.9) * ms,
                "max": max(ref_setup) * ms,
                "teardown_p50": pct(ref_teardown, 0.5) * ms,
            },
        },
        "throughput_gbit_s": {k: [v * 8 / 1e9 for v in vs] for k, vs in rates.items()},
        "seconds": args.seconds,
        "rounds": args.rounds,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2, sort_keys=True))
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
