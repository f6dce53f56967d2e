"""``shiftnet master`` + two ``shiftnet node`` processes: a two-node cluster on one machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET, Shiftnet
from tests.support.ports import free_cluster_network

from shiftnet.sdn.pidfiles import process_start_time, read_record

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]


def spawn(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(home)
    return subprocess.Popen(
        [SHIFTNET, "--store", f"sqlite://{home}/state.db", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def wait_json(sn: Shiftnet, args: list[str], ok: object, timeout: float = 60) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    last: dict = {}  # type: ignore[type-arg]
    while time.monotonic() < deadline:
        res = sn.run(*args, "-o", "json")
        if res.returncode == 0:
            last = json.loads(res.stdout)
            if ok(last):  # type: ignore[operator]
                return last
        time.sleep(0.3)
    raise AssertionError(f"timed out: shiftnet {' '.join(args)}: {json.dumps(last)[:2000]}")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Shiftnet, list[subprocess.Popen[str]]]]:
    home = tmp_path / "home"
    home.mkdir()
    net = free_cluster_network()  # apart from other clusters' pods
    procs = [spawn(home, "master", "--cluster-network", net)]
    sn = Shiftnet(f"sqlite://{home}/state.db", home)
    try:
        yield sn, procs
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_two_nodes_share_the_pods_and_stop_them_on_sigterm(
    cluster: tuple[Shiftnet, list[subprocess.Popen[str]]],
) -> None:
    sn, procs = cluster
    procs.append(spawn(sn.home, "node", "--node-name", "alpha", "--heartbeat", "2"))
    procs.append(spawn(sn.home, "node", "--node-name", "beta", "--heartbeat", "2"))
    subnets = wait_json(sn, ["get", "hostsubnets"], lambda d: len(d["items"]) == 2)
    by_node = {h["host"]: h["subnet"] for h in subnets["items"]}
    assert by_node["alpha"] != by_node["beta"]

    sn.ok("apply", "-f", str(REPO / "examples" / "demo" / "00-namespaces.yaml"))
    sn.ok("apply", "-f", str(REPO / "examples" / "demo" / "10-hello.yaml"))

    def all_ready(d: dict) -> bool:  # type: ignore[type-arg]
        items = d["items"]
        return len(items) == 3 and all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
            for p in items
        )

    pods = wait_json(sn, ["get", "pods", "-n", "demo"], all_ready)["items"]
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert nodes == {"alpha", "beta"}, "the scheduler spreads pods over both nodes"
    for p in pods:
        prefix = by_node[p["spec"]["nodeName"]].rsplit(".", 1)[0] + "."
        assert p["status"]["podIP"].startswith(prefix), (p["status"]["podIP"], prefix)
        logs = sn.ok("logs", p["metadata"]["name"], "-n", "demo")
        assert f"podserver pod={p['metadata']['name']} ns=demo listening on" in logs

    eps = wait_json(
        sn,
        ["get", "endpoints", "hello", "-n", "demo"],
        lambda d: len([a for s in d.get("subsets", []) for a in s.get("addresses", [])]) == 3,
    )
    assert {a["nodeName"] for s in eps["subsets"] for a in s["addresses"]} == {"alpha", "beta"}

    pids = [
        rec.pid for f in sn.home.glob("nodes/*/pods/*/*.pid") if (rec := read_record(f)) is not None
    ]
    assert len(pids) == 3
    for node_proc in procs[1:]:
        os.killpg(node_proc.pid, signal.SIGTERM)
    for node_proc in procs[1:]:
        assert node_proc.wait(timeout=60) == 143  # the shell's code for "stopped by SIGTERM"
    for pid in pids:
        assert process_start_time(pid) is None, f"pod process {pid} survived its node"
    # The master saw the pods stop: no ready addresses left.
    wait_json(
        sn,
        ["get", "endpoints", "hello", "-n", "demo"],
        lambda d: not [a for s in d.get("subsets", []) for a in s.get("addresses", [])],
    )
