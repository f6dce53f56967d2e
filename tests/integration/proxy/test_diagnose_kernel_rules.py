"""``shiftnet diagnose service`` checks the kernel rules of the proxy that runs, where it runs.

A real ``shiftnet proxy --mode nftables|iptables --netns NODE`` programs a test-created
namespace (tests.support.proxy_netns); diagnose reads the proxy's mode record, lists
that namespace's table (``nft -j`` / ``iptables-save``) and connects to the ClusterIP
from inside it. With the service's rules present check 3 passes and names them; with
them deleted by hand inside the namespace it fails with a fix. The host's own tables
are never read for this or written.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET
from tests.support.proxy_cluster import endpoints, put, service
from tests.support.proxy_netns import Topology, sh

from shiftnet.client import Client
from shiftnet.proxy.mode_record import record_path
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

PORT = 8080
VIP = "172.30.0.10"


@pytest.fixture(scope="module")
def topo() -> Iterator[Topology]:
    t = Topology(backends=1).create()
    try:
        t.start_backends(PORT)
        # a local client of the node needs a route to look up before OUTPUT's DNAT
        sh("ip", "-n", t.node, "route", "add", "172.30.0.0/24", "via", t.backend_ip(1))
        yield t
    finally:
        t.destroy()


def env_for(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    return {**env, "SHIFTNET_HOME": str(tmp), "SHIFTNET_STORE": f"sqlite://{tmp}/state.db"}


@pytest.fixture(params=["nftables", "iptables"])
def proxy(request: pytest.FixtureRequest, topo: Topology, tmp_path: Path) -> Iterator[str]:
    mode = request.param

    async def seed() -> None:
        store = open_store(f"sqlite://{tmp_path}/state.db")
        try:
            await put(Client(store), service("web", VIP, 80))
            await put(Client(store), endpoints("web", [(topo.backend_ip(1), PORT)]))
        finally:
            await store.close()

    asyncio.run(seed())
    argv = [SHIFTNET, "proxy", "--mode", mode, "--netns", topo.node, "--cleanup"]
    argv += ["--healthz-bind-address", "", "--iptables-sync-period", "3600"]
    log = tmp_path / "proxy.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env_for(tmp_path), stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not record_path(tmp_path).exists():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield mode
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def diagnose(tmp: Path) -> list[dict[str, object]]:
    res = subprocess.run(
        [SHIFTNET, "diagnose", "service", "web", "-n", "default", "--json"],
        env=env_for(tmp),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == 1, res.stdout  # no cluster DNS here: check 4 always fails
    checks = json.loads(res.stdout)["checks"]
    assert isinstance(checks, list)
    return checks


def in_node(topo: Topology, *argv: str) -> str:
    return sh("ip", "netns", "exec", topo.node, *argv)


def delete_rules(topo: Topology, mode: str, tmp: Path) -> None:
    """Remove the service's dispatch by hand, inside the namespace only."""
    if mode == "nftables":
        listing = json.loads(in_node(topo, "nft", "-j", "list", "table", "ip", "shiftnet-proxy"))
        (live,) = [
            m["map"]["name"]
            for m in listing["nftables"]
            if "map" in m and m["map"]["name"].startswith("service-ips")
        ]
        element = f"{{ {VIP} . tcp . 80 }}"
        in_node(topo, "nft", "delete", "element", "ip", "shiftnet-proxy", live, element)
        return
    backend = json.loads(record_path(tmp).read_text())["iptables"]["backend"]
    save = in_node(topo, f"iptables-{backend}-save", "-t", "nat")
    (line,) = [ln for ln in save.splitlines() if f"-d {VIP}/32" in ln and "KUBE-SVC-" in ln]
    in_node(topo, f"iptables-{backend}", "-t", "nat", "-D", *line.split()[1:])


def test_rules_present_then_deleted_by_hand(topo: Topology, proxy: str, tmp_path: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        checks = diagnose(tmp_path)
        if checks[2]["ok"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    rules, connection = checks[2], checks[4]
    assert rules["ok"], rules
    found = str(rules["found"])
    assert found.startswith(f"{proxy} mode ("), found
    assert f"network namespace {topo.node}" in found
    if proxy == "nftables":
        assert "table ip shiftnet-proxy" in found
        assert f"{VIP} . tcp . 80 goto spread-1 (1 endpoint elements in endpoints-tcp" in found
    else:
        assert f"{VIP}/32 tcp dport 80 -> KUBE-DST-" in found and "-> KUBE-SVC-" in found
    assert connection["ok"], connection  # made from inside the node namespace

    delete_rules(topo, proxy, tmp_path)
    checks = diagnose(tmp_path)
    rules = checks[2]
    assert not rules["ok"], rules
    found = str(rules["found"])
    if proxy == "nftables":
        assert f"port 80: no element {VIP} . tcp . 80 in map service-ips" in found, found
    else:
        assert f"port 80: no nat rule sends {VIP}/32 tcp dport 80 to KUBE-SVC-" in found, found
    assert "removed by hand" in str(rules["fix"])
    assert "restarting the proxy" in str(rules["fix"])
    assert not checks[4]["ok"], checks[4]
