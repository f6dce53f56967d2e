"""``shiftnet lab up --nodes 3``: a whole SDN cluster, checked with real packets (root only).

One lab for the module (building it is the slow part); the tests run in file
order and the last one removes a node.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyroute2 import NetNS, netns
from tests.support.sdn_lab import (
    ECHO_PEER,
    POD_SERVER,
    TCP_ASK,
    LabHandle,
    http_get,
    in_ns,
    manifests,
    new_prefix,
    shiftnet,
)

from shiftnet.api import Endpoints, HostSubnet, Pod, Route
from shiftnet.client import Client
from shiftnet.sdn.lab import Lab
from shiftnet.sdn.sdnmode import ETC_NETNS
from shiftnet.sdn.underlay import INTERNET_ADDRESS, MASTER_ADDRESS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

# pod name -> node index
PLACEMENT = {"a1": 1, "a2": 1, "b": 2, "c": 3, "d": 2}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


@contextlib.contextmanager
def _reaping_our_children(handle: LabHandle | None) -> Iterator[None]:
    """Reap, while ``lab down`` runs, the lab processes this test process started.

    An agent restarted by a test is this process's child: once ``lab down`` stops it,
    it stays a zombie until we wait for it, and ``lab down`` sees its group alive for
    the whole grace period. Outside the tests that parent is a CLI process that has
    exited, and init reaps the agent at once.
    """
    lab_json = handle.state_dir / "lab" / handle.prefix / "lab.json" if handle else None
    ours = (
        [p["pid"] for p in handle.state()["processes"] if _parent_of(p["pid"]) == os.getpid()]
        if handle is not None and lab_json is not None and lab_json.exists()
        else []
    )
    done = threading.Event()

    def reap() -> None:
        waiting = set(ours)
        while waiting and not done.is_set():
            for pid in list(waiting):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == 0:
                        continue
                waiting.discard(pid)
            time.sleep(0.05)

    reaper = threading.Thread(target=reap, name="lab-reaper", daemon=True)
    reaper.start()
    try:
        yield
    finally:
        done.set()
        reaper.join()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabHandle]:
    state_dir = tmp_path_factory.mktemp("lab")
    prefix = new_prefix()
    handle: LabHandle | None = None
    pids: list[int] = []
    try:
        # a user's KUBECONFIG (say, an admin's) must not reach the nodes
        user_env = {**os.environ, "KUBECONFIG": str(state_dir / "admin-kubeconfig")}
        out = shiftnet(
            "--state-dir", str(state_dir), "lab", "up", "--nodes", "3", "--prefix", prefix,
            env=user_env,
        )  # fmt: skip
        assert "Ready, subnet 10.1." in out
        raw = Lab(state_dir, prefix).load()
        assert raw is not None
        handle = LabHandle(state_dir, prefix, raw.store, raw.nodes)
        server = state_dir / "podserver.py"
        server.write_text(POD_SERVER)
        names = {i: handle.node(i)["name"] for i in (1, 2, 3)}
        manifest = manifests(
            server, {p: names[i] for p, i in PLACEMENT.items()}, exec_probe=frozenset({"c"})
        )
        (state_dir / "app.json").write_text(__import__("json").dumps(manifest))
        handle.cli("apply", "-f", str(state_dir / "app.json"))

        def ready() -> bool:
            pods = handle.pods() if handle else {}
            return len(pods) == len(PLACEMENT) and all(
                p.status.pod_ip and any(c.ready for c in p.status.container_statuses)
                for p in pods.values()
            )

        handle.wait("pods running and ready", ready, timeout=60)
        pids = [p["pid"] for p in handle.state()["processes"]]
        yield handle
    finally:
        with _reaping_our_children(handle):
            shiftnet("--state-dir", str(state_dir), "lab", "down", "--prefix", prefix)
        left = [n for n in netns.listnetns() if n.startswith(prefix)]
        if handle is not None:
            pids += (
                [p["pid"] for p in handle.state().get("processes", [])]
                if (state_dir / "lab" / prefix / "lab.json").exists()
                else []
            )
        assert left == [], f"namespaces left behind: {left}"
        alive = [p for p in pids if _alive(p)]
        assert alive == [], f"lab processes left behind: {alive}"


def _pods(lab: LabHandle) -> dict[str, Pod]:
    return lab.pods()


def _fd_targets(pid: int) -> list[str]:
    out = []
    with contextlib.suppress(OSError):  # a short-lived helper may be gone already
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                out.append(os.readlink(fd))
    return out


def _proc_strings(pid: int, what: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().decode().split("\0")
    except OSError:
        return []


def test_node_namespaces_are_api_clients_with_their_own_token(lab: LabHandle) -> None:
    """Every process in a node namespace talks to the API server over the underlay with
    its node's own token, and none opens the store (the master machine's processes do)."""
    home = lab.state_dir / "lab" / lab.prefix
    store_file = str(home / "state.db")
    state = lab.state()
    api = f"https://{MASTER_ADDRESS}:6443"
    assert state["api"] == api
    admin = (home / "apiserver" / "admin.token").read_text().strip()
    tokens: dict[str, str] = {}
    for node in lab.nodes:
        path = home / "machines" / node["name"] / "kubeconfig"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        config = yaml.safe_load(path.read_text())
        assert [u["name"] for u in config["users"]] == [f"system:node:{node['name']}"]
        assert [c["cluster"]["server"] for c in config["clusters"]] == [api]
        tokens[node["name"]] = config["users"][0]["user"]["token"]
    assert admin not in tokens.values() and len(set(tokens.values())) == len(lab.nodes)

    pids = netns.ns_pids()
    roles: dict[str, set[str]] = {}
    for node in lab.nodes:
        own = f"SHIFTNET_STORE=kube://{home / 'machines' / node['name'] / 'kubeconfig'}"
        connected = in_ns(node["netns"], "ss", "-Htnp", "state", "established", "dst", api[8:])
        for pid in map(int, pids.get(node["netns"], [])):
            assert not [t for t in _fd_targets(pid) if t.startswith(store_file)], pid
            argv = _proc_strings(pid, "cmdline")
            if argv[1:3] != ["-m", "shiftnet"]:
                continue  # HAProxy, or a short-lived helper of the agent
            env = _proc_strings(pid, "environ")
            assert own in env and not [e for e in env if e.startswith("KUBECONFIG=")], argv
            assert re.search(rf"pid={pid},", connected), f"{argv[3]} has no connection to {api}"
            roles.setdefault(node["name"], set()).add(argv[3])
    first, *others = (n["name"] for n in lab.nodes)
    assert roles.pop(first) == {"node", "proxy", "dns", "router"}
    assert roles == {name: {"node", "proxy"} for name in others}
    # the check sees an open store where there is one: on the master machine
    master = [int(p) for p in pids[state["master_netns"]]]
    assert len(master) == 2
    assert all(any(t.startswith(store_file) for t in _fd_targets(p)) for p in master)

    ca = str(home / "apiserver" / "ca.crt")

    def status(token: str) -> str:
        return in_ns(
            lab.node(2)["netns"],
            "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca,
            "-H", f"Authorization: Bearer {token}", f"{api}/api/v1/nodes",
        )  # fmt: skip

    assert status(tokens[lab.node(2)["name"]]) == "200"
    assert status("not-a-token") == "401"


def test_pod_to_pod_same_node_and_across_vxlan(lab: LabHandle) -> None:
    pods = _pods(lab)
    a1 = pods["a1"]
    src = lab.pod_ns(a1)
    for target in ("a2", "b", "c"):
        body = http_get(src, f"http://{pods[target].status.pod_ip}:8080/")
        # the server sees the pod's own address: no NAT between pods
        assert body == f"{target} {a1.status.pod_ip}"
    # the path really is what the devices say
    same = lab.lab("trace", "a1", "a2").splitlines()[1]
    assert same.startswith("eth0 → veth") and same.count("br0") == 1 and "vxlan0" not in same
    far = lab.lab("trace", "a1", "b").splitlines()[1]
    n1, n2 = lab.node(1)["hostIP"], lab.node(2)["hostIP"]
    assert f"br0 → vxlan0 → (underlay eth0 {n1} → {n2}) → vxlan0 → br0" in far
    assert far.endswith("→ eth0")


def test_pod_to_service_cluster_ip_and_dns_name(lab: LabHandle) -> None:
    async def svc(c: Client) -> tuple[str, list[str]]:
        from shiftnet.api import Service

        s = await c.get(Service, "default", "web")
        ep = await c.get(Endpoints, "default", "web")
        ready = [a.ip for sub in ep.subsets for a in sub.addresses]
        return s.spec.cluster_ip or "", ready

    cluster_ip, _ = lab.read(svc)
    assert cluster_ip.startswith("172.30.")
    lab.wait("ready endpoints", lambda: len(lab.read(svc)[1]) == len(PLACEMENT))
    src = lab.pod_ns(_pods(lab)["b"])
    seen = {http_get(src, f"http://{cluster_ip}/").split()[0] for _ in range(24)}
    assert len(seen) >= 2, f"kernel proxy always picked {seen}"
    # the pod's own /etc/resolv.conf (ip netns exec bind-mounts /etc/netns/<ns>/)
    resolv = in_ns(src, "cat", "/etc/resolv.conf")
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in resolv
    assert f"nameserver {lab.node(1)['hostIP']}" in resolv
    for name in ("web", "web.default.svc.cluster.local"):
        assert http_get(src, f"http://{name}/").split()[0] in PLACEMENT


def test_pod_to_outside_is_masqueraded_behind_node(lab: LabHandle) -> None:
    server = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            lab.inet,
            sys.executable,
            "-c",
            ECHO_PEER,
            INTERNET_ADDRESS,
            "9099",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        pods = _pods(lab)
        for name, i in (("a1", 1), ("c", 3)):
            seen = in_ns(
                lab.pod_ns(pods[name]), sys.executable, "-c", TCP_ASK, INTERNET_ADDRESS, "9099"
            ).strip()
            assert seen == lab.node(i)["hostIP"]
        path = lab.lab("trace", "c", INTERNET_ADDRESS).splitlines()[1]
        pod_ip, host_ip = pods["c"].status.pod_ip, lab.node(3)["hostIP"]
        assert path.endswith(f"br0 → (NAT {pod_ip} → {host_ip}) → eth0 → {INTERNET_ADDRESS}")
    finally:
        server.kill()
        server.wait()


def test_external_client_through_router_reaches_pods_on_every_node(lab: LabHandle) -> None:
    node1 = lab.node(1)["hostIP"]
    seen: set[str] = set()

    def one() -> str:
        out = in_ns(
            lab.inet,
            "curl",
            "-sk",
            "-m",
            "3",
            "--resolve",
            f"web.lab.example:443:{node1}",
            "https://web.lab.example/",
            check=False,
        ).strip()
        if out:
            seen.add(out.split()[0])
        return out

    lab.wait("the route serving every pod", lambda: (one(), seen >= set(PLACEMENT))[1], timeout=30)


def _diagnose(lab: LabHandle, *argv: str, expect: int) -> dict[str, Any]:
    """``shiftnet --state-dir <the lab's> diagnose ... --json`` from the host, as a user types
    it: no store, namespace or DNS given."""
    env = {k: v for k, v in os.environ.items() if k not in ("SHIFTNET_STORE", "SHIFTNET_HOME")}
    proc = subprocess.run(
        [sys.executable, "-m", "shiftnet", "--state-dir", str(lab.state_dir), "diagnose",
         *argv, "--json"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == expect, proc.stdout + proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def test_diagnose_finds_the_labs_router_and_dns(lab: LabHandle) -> None:
    """diagnose run on the host finds the lab under the state directory and checks from the
    router's node: a healthy route and service pass every check, a refused route is check 4."""
    node1 = lab.node(1)["hostIP"]
    resolve = f"web.lab.example:443:{node1}"
    route = _diagnose(lab, "route", "web", "-n", "default", "--resolve", resolve, expect=0)
    assert [(c["number"], c["ok"]) for c in route["checks"]] == [(n, True) for n in range(1, 9)]
    assert f"{node1}:443 accepts connections" in route["checks"][2]["found"]
    assert re.search(r"server s\d+ \(pod `(a1|a2|b|c|d)` at 10\.1\.", route["checks"][7]["found"])
    service = _diagnose(lab, "service", "web", "-n", "default", expect=0)
    assert service["ok"] and all(c["ok"] for c in service["checks"]), service
    assert f"({node1}:53)" in service["checks"][3]["found"]

    # a younger route claiming the same host is refused by the lab's router
    younger = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "web-copy", "namespace": "default"},
        "spec": {"host": "web.lab.example", "to": {"kind": "Service", "name": "web"},
                 "tls": {"termination": "edge"}},
    }  # fmt: skip
    (lab.state_dir / "web-copy.json").write_text(json.dumps(younger))
    lab.cli("apply", "-f", str(lab.state_dir / "web-copy.json"))
    try:

        async def refused(c: Client) -> bool:
            r = await c.get(Route, "default", "web-copy")
            return any(
                cond.type == "Admitted" and cond.status == "False"
                for entry in r.status.ingress
                for cond in entry.conditions
            )

        lab.wait("the router refusing web-copy", lambda: lab.read(refused))
        report = _diagnose(
            lab, "route", "web-copy", "-n", "default", "--resolve", resolve, expect=1
        )
        first = next(c for c in report["checks"] if not c["ok"])
        assert first["number"] == 4, report
        assert "route not admitted by router `router`" in first["found"]
        assert (
            'HostAlreadyClaimed: host "web.lab.example" is already claimed by route '
            in (first["found"])
        )
        assert first["fix"] == "use another host or path, or delete the older route"
    finally:
        lab.cli("delete", "route", "web-copy")


def test_agent_killed_and_restarted_keeps_pods_connected(lab: LabHandle) -> None:
    handle = Lab(lab.state_dir, lab.prefix)
    name2 = lab.node(2)["name"]
    pods = _pods(lab)
    b_ip = pods["b"].status.pod_ip
    src = lab.pod_ns(pods["a1"])
    pid_before = _server_pid(lab, pods["b"])
    d_ns, d_pid = lab.pod_ns(pods["d"]), _server_pid(lab, pods["d"])
    handle.stop_agent(name2, signal.SIGKILL)
    assert http_get(src, f"http://{b_ip}:8080/").startswith("b ")
    lab.cli("delete", "pod", "d")  # while no agent watches node2
    assert d_ns in netns.listnetns()
    handle.start_agent(name2)

    def readopted() -> bool:
        log = (lab.state_dir / "lab" / lab.prefix / f"node-{name2}.log").read_text()
        return log.count("running its pods") >= 2

    lab.wait("the restarted agent", readopted)
    for _ in range(5):
        assert http_get(src, f"http://{b_ip}:8080/").startswith("b ")
    after = _pods(lab)["b"]
    assert after.status.pod_ip == b_ip
    assert _server_pid(lab, after) == pid_before  # adopted, not restarted
    assert after.status.container_statuses[0].restart_count == 0
    # the deleted pod's process and sandbox were found and removed by the new agent
    lab.wait("the stale pod namespace removed", lambda: d_ns not in netns.listnetns())
    assert not _alive(d_pid)
    assert not (ETC_NETNS / d_ns).exists()


def _server_pid(lab: LabHandle, pod: Pod) -> int:
    pids = netns.ns_pids().get(lab.pod_ns(pod), [])
    assert len(pids) == 1, pids
    return int(pids[0])


def test_node_removed_releases_subnet_and_routes(lab: LabHandle) -> None:
    handle = Lab(lab.state_dir, lab.prefix)
    node3 = lab.node(3)
    c_ns = lab.pod_ns(_pods(lab)["c"])

    async def subnets(c: Client) -> dict[str, str]:
        return {h.host: h.subnet for h in await c.list(HostSubnet)}

    gone = lab.read(subnets)[node3["name"]]
    handle.stop_agent(node3["name"])
    lab.cli("delete", "node", node3["name"])
    lab.wait("the HostSubnet released", lambda: node3["name"] not in lab.read(subnets))

    def routes_on(i: int) -> list[str]:
        with NetNS(lab.node(i)["netns"]) as ipr:
            return [
                f"{r.get_attr('RTA_DST')}/{r['dst_len']}"
                for r in ipr.get_routes(family=2)
                if r.get_attr("RTA_DST")
            ]

    for i in (1, 2):
        lab.wait(f"node{i} drops the route to {gone}", lambda i=i: gone not in routes_on(i))
    assert c_ns not in netns.listnetns()  # the stopped agent took its pod down
    assert not (ETC_NETNS / c_ns).exists()
    # the remaining nodes still reach each other
    pods = _pods(lab)
    assert http_get(lab.pod_ns(pods["a1"]), f"http://{pods['b'].status.pod_ip}:8080/").startswith(
        "b "
    )


def test_trace_cli_is_registered(lab: LabHandle) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "shiftnet", "lab", "trace", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "POD_A" in out and "POD_B" in out
    status = lab.lab("status")
    assert f"node {lab.node(1)['name']}" in status
    assert "running" in status and "EXITED" not in status
    assert Path(lab.state_dir / "lab" / lab.prefix / "lab.json").exists()
