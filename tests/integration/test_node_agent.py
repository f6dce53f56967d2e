"""The node agent on real processes: registration, pod IPs, env, restart policy, stop, adoption."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.node import (
    NodeHarness,
    group_alive,
    pid_alive,
    script_pod,
    server_pod,
    wait_for,
)
from tests.support.ports import worker_octet

from shiftnet.api import Node, Pod

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


def http_get(ip: str, port: int, path: str = "/") -> str:
    with socket.create_connection((ip, port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    return data.decode()


async def test_registers_ready_node_with_loopback_address(node: NodeHarness) -> None:
    n = await node.client.get(Node, None, "node-a")
    assert n.internal_ip == "127.0.0.1"
    assert n.ready
    assert n.metadata.labels["kubernetes.io/hostname"] == "node-a"


async def test_pods_get_distinct_ips_from_the_subnet_and_serve_on_them(node: NodeHarness) -> None:
    for i in range(3):
        await node.client.create(server_pod(f"web-{i}"))
    pods = [await node.wait_ready(f"web-{i}") for i in range(3)]
    ips = [p.status.pod_ip for p in pods]
    assert len(set(ips)) == 3
    prefix = node.subnet.rsplit(".", 1)[0]
    assert all(ip and ip.startswith(prefix + ".") for ip in ips)
    assert prefix + ".1" not in ips  # the gateway address is reserved
    for p in pods:
        assert p.status.host_ip == "127.0.0.1"
        assert p.status.phase == "Running"
        body = await asyncio.to_thread(http_get, p.status.pod_ip or "", 8080, "/who")
        assert f"pod={p.name} ns=default ip={p.status.pod_ip} path=/who" in body


async def test_container_sees_pod_identity_and_its_env(node: NodeHarness, tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    script = (
        f"import json,os,time;json.dump(dict(os.environ),open({str(out)!r},'w'));time.sleep(60)"
    )
    pod = script_pod(
        "envpod",
        script,
        env={"GREETING": "hello $(POD_NAME)", "PORT_COPY": "$(PORT)"},
        ports=[{"name": "http", "containerPort": 9090}],
    )
    await node.client.create(pod)
    p = await node.wait_ready("envpod")
    env = await wait_for(
        lambda: asyncio.sleep(0, json.loads(out.read_text()) if out.exists() else None),
        what="env file",
    )
    assert env["POD_IP"] == p.status.pod_ip
    assert env["POD_NAME"] == "envpod"
    assert env["POD_NAMESPACE"] == "default"
    assert env["PORT"] == "9090"
    assert env["GREETING"] == "hello envpod"
    assert env["PORT_COPY"] == "9090"
    assert "SHIFTNET_STORE" not in env  # a pod does not inherit the agent's environment


async def test_killed_process_is_restarted_with_same_ip(node: NodeHarness) -> None:
    await node.client.create(server_pod("web"))
    first = await node.wait_ready("web")
    [pid] = node.pids("web")
    os.kill(pid, signal.SIGKILL)
    again = await node.wait_pod(
        "web", lambda p: p.ready and p.status.container_statuses[0].restart_count == 1
    )
    assert again.status.pod_ip == first.status.pod_ip
    [new_pid] = node.pids("web")
    assert new_pid != pid


async def test_restart_policy_never_and_on_failure(node: NodeHarness) -> None:
    await node.client.create(script_pod("fails", "raise SystemExit(3)", restart_policy="Never"))
    await node.client.create(script_pod("done", "print('bye')", restart_policy="OnFailure"))
    await node.client.create(script_pod("flaky", "raise SystemExit(1)", restart_policy="OnFailure"))
    failed = await node.wait_pod("fails", lambda p: p.status.phase == "Failed")
    state = failed.status.container_statuses[0].state["terminated"]
    assert state["exitCode"] == 3
    assert failed.status.container_statuses[0].restart_count == 0
    done = await node.wait_pod("done", lambda p: p.status.phase == "Succeeded")
    assert done.status.container_statuses[0].state["terminated"]["reason"] == "Completed"
    flaky = await node.wait_pod(
        "flaky", lambda p: p.status.container_statuses[0].restart_count >= 2
    )
    assert flaky.status.phase == "Running"


async def test_missing_command_is_reported_not_crashing(node: NodeHarness) -> None:
    pod = script_pod("nocmd", "", restart_policy="Never")
    pod.spec.containers[0].command = ["/nonexistent/binary"]
    await node.client.create(pod)
    p = await node.wait_pod("nocmd", lambda p: p.status.phase == "Failed")
    term = p.status.container_statuses[0].state["terminated"]
    assert term["reason"] == "StartError"
    assert "/nonexistent/binary" in str(term["message"])


async def test_delete_stops_the_whole_process_group(node: NodeHarness) -> None:
    # The command starts a child of its own; both must go.
    script = (
        "import subprocess,sys,time;"
        "subprocess.Popen([sys.executable,'-c','import time; time.sleep(300)']);"
        "time.sleep(300)"
    )
    await node.client.create(script_pod("tree", script))
    await node.wait_ready("tree")
    [pid] = node.pids("tree")
    await wait_for(
        lambda: asyncio.sleep(
            0, len([p for p in os.listdir("/proc") if p.isdigit() and _pgid(p) == pid]) >= 2
        ),
        what="child process",
    )
    await node.client.delete(Pod, "default", "tree")
    await wait_for(lambda: asyncio.sleep(0, not group_alive(pid)), what="process group gone")
    assert not pid_alive(pid)


def _pgid(pid: str) -> int:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(raw[raw.rfind(")") + 2 :].split()[2])


async def test_sigterm_ignoring_pod_is_killed_after_grace(
    node: NodeHarness, tmp_path: Path
) -> None:
    marker = tmp_path / "handler-installed"
    script = (
        "import pathlib,signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        f"pathlib.Path({str(marker)!r}).touch(); time.sleep(300)"
    )
    check = f"import os,sys; sys.exit(0 if os.path.exists({str(marker)!r}) else 1)"
    probe = {"exec": {"command": [sys.executable, "-c", check]}, "periodSeconds": 1}
    await node.client.create(script_pod("stubborn", script, grace=2, probe=probe))
    await node.wait_ready("stubborn")
    [pid] = node.pids("stubborn")
    await node.client.delete(Pod, "default", "stubborn")
    await asyncio.sleep(0.5)
    assert pid_alive(pid), "SIGTERM is ignored: it must live until the grace period ends"
    await wait_for(lambda: asyncio.sleep(0, not pid_alive(pid)), timeout=15, what="SIGKILL")


async def test_logs_go_to_a_file_per_container(node: NodeHarness) -> None:
    await node.client.create(
        script_pod("talker", "print('hello from the pod', flush=True)", restart_policy="Never")
    )
    await node.wait_pod("talker", lambda p: p.status.phase == "Succeeded")
    log = node.state_dir / "nodes" / "node-a" / "logs" / "default_talker" / "main.log"
    assert "hello from the pod" in log.read_text()


async def test_agent_restart_adopts_running_pods(tmp_path: Path) -> None:
    h = NodeHarness(tmp_path)
    try:
        await h.start(stop_pods_on_exit=False)
        await h.client.create(server_pod("keep"))
        before = await h.wait_ready("keep")
        [pid] = h.pids("keep")
        await h.stop_agent()
        assert pid_alive(pid), "stop_pods_on_exit=False leaves pods running"
        await h.start()
        assert h.pids("keep") == [pid], "the new agent adopts the same process"
        after = await h.wait_ready("keep")
        assert after.status.pod_ip == before.status.pod_ip
        assert after.status.container_statuses[0].restart_count == 0
        # An adopted process that dies is restarted like any other.
        os.kill(pid, signal.SIGKILL)
        again = await h.wait_pod(
            "keep", lambda p: p.ready and p.status.container_statuses[0].restart_count == 1
        )
        assert again.status.pod_ip == before.status.pod_ip
        [new_pid] = h.pids("keep")
        assert new_pid != pid
    finally:
        await h.close()
    assert not any(pid_alive(p) for p in [pid, new_pid])


async def test_pod_deleted_while_agent_down_is_reaped(tmp_path: Path) -> None:
    h = NodeHarness(tmp_path)
    try:
        await h.start(stop_pods_on_exit=False)
        await h.client.create(server_pod("orphan"))
        await h.wait_ready("orphan")
        [pid] = h.pids("orphan")
        await h.stop_agent()
        await h.client.delete(Pod, "default", "orphan")
        await h.start()
        await wait_for(lambda: asyncio.sleep(0, not pid_alive(pid)), what="orphan stopped")
    finally:
        await h.close()


async def test_ip_is_not_reused_while_owner_runs_after_restart(tmp_path: Path) -> None:
    h = NodeHarness(tmp_path)
    try:
        await h.start(stop_pods_on_exit=False)
        await h.client.create(server_pod("a"))
        a = await h.wait_ready("a")
        await h.stop_agent()
        await h.start()
        await h.client.create(server_pod("b"))
        b = await h.wait_ready("b")
        assert a.status.pod_ip != b.status.pod_ip
    finally:
        await h.close()


async def test_clean_stop_stops_every_pod(tmp_path: Path) -> None:
    h = NodeHarness(tmp_path)
    try:
        await h.start()
        for i in range(3):
            await h.client.create(server_pod(f"p{i}"))
        for i in range(3):
            await h.wait_ready(f"p{i}")
        pids = [pid for i in range(3) for pid in h.pids(f"p{i}")]
        assert len(pids) == 3
        await h.stop_agent()
        assert not any(group_alive(p) for p in pids)
        node = await h.client.get(Node, None, "node-a")
        assert not node.ready
        for i in range(3):
            p = await h.client.get(Pod, "default", f"p{i}")
            assert not p.ready, "a stopped pod must not stay in its Service's addresses"
            assert p.status.phase == "Pending"
            assert p.status.container_statuses[0].state["waiting"]["reason"] == "NodeAgentStopped"
        # The next agent runs them again, on the same addresses.
        before = {
            f"p{i}": (await h.client.get(Pod, "default", f"p{i}")).status.pod_ip for i in range(3)
        }
        await h.start()
        for i in range(3):
            again = await h.wait_ready(f"p{i}")
            assert again.status.pod_ip == before[f"p{i}"]
    finally:
        await h.close()


def test_pid_records_refuse_a_recycled_pid(tmp_path: Path) -> None:
    from shiftnet.sdn.pidfiles import ContainerRecord, process_start_time, read_record, write_record
    from shiftnet.sdn.process import PodProcess

    me = os.getpid()
    start = process_start_time(me)
    assert start is not None
    rec = ContainerRecord("uid", "ns", "p", "c", me, start, "127.10.0.2", 0, "t", "h")
    write_record(tmp_path / "c.pid", rec)
    assert read_record(tmp_path / "c.pid") == rec
    assert rec.alive
    assert PodProcess.adopt(me, start) is not None
    # Same pid, other start time: a different process that got the number.
    assert PodProcess.adopt(me, start + 1) is None
    (tmp_path / "bad.pid").write_text("{not json")
    assert read_record(tmp_path / "bad.pid") is None


async def test_full_subnet_keeps_pod_pending_until_an_address_frees(tmp_path: Path) -> None:
    # A /29 has 8 addresses; network, gateway (.1) and broadcast are reserved: 5 pods fit.
    net = f"127.10.{worker_octet(9)}"
    h = NodeHarness(tmp_path, subnet=f"{net}.0/29")
    try:
        await h.start()
        for i in range(6):
            await h.client.create(script_pod(f"p{i}", "import time; time.sleep(300)"))
        waiting = await h.wait_pod("p5", lambda p: p.status.reason == "OutOfAddresses")
        assert waiting.status.phase == "Pending" and not waiting.status.pod_ip
        assert f"{net}.0/29" in (waiting.status.message or "")
        ips = {(await h.wait_ready(f"p{i}")).status.pod_ip for i in range(5)}
        assert ips == {f"{net}.{n}" for n in range(2, 7)}
        await h.client.delete(Pod, "default", "p0")
        late = await h.wait_ready("p5")
        assert late.status.pod_ip == f"{net}.2"
    finally:
        await h.close()


async def test_changed_command_restarts_the_pod(node: NodeHarness) -> None:
    await node.client.create(script_pod("chg", "import time; time.sleep(300)"))
    first = await node.wait_ready("chg")
    [old_pid] = node.pids("chg")

    def change(p: Pod) -> Pod:
        p.spec.containers[0].command = [sys.executable, "-c", "import time; time.sleep(301)"]
        return p

    await node.client.mutate(Pod, "default", "chg", change)

    async def replaced() -> bool:
        pids = node.pids("chg")
        return bool(pids) and pids != [old_pid]

    await wait_for(replaced, what="new process")
    assert not pid_alive(old_pid), "the old process is gone before the new one starts"
    again = await node.wait_ready("chg")
    assert again.status.pod_ip == first.status.pod_ip
    pid_file = next((node.state_dir / "nodes" / "node-a" / "pods").glob("*/main.pid"))
    assert str(node.pids("chg")[0]) in pid_file.read_text()


async def test_pod_names_that_are_not_file_names_are_refused(node: NodeHarness) -> None:
    # Written around the API's validation, straight into the store.
    raw = script_pod("placeholder", "import time; time.sleep(60)").to_dict()
    raw["metadata"]["name"] = "../../escape"
    await node.store.create("pods", raw)
    key = ("default", "../../escape")
    await wait_for(
        lambda: asyncio.sleep(0, key in node.agent._unplaceable),  # type: ignore[union-attr]
        what="pod refused",
    )
    reason, message = node.agent._unplaceable[key]  # type: ignore[union-attr]
    assert reason == "InvalidPod" and "cannot be used as a file name" in message
    assert key not in node.agent.runners  # type: ignore[union-attr]
    assert not (node.state_dir / "nodes" / "escape").exists()
    assert not list(node.state_dir.glob("nodes/node-a/logs/*escape*"))
    # The agent keeps working for everyone else.
    await node.client.create(script_pod("fine", "import time; time.sleep(60)"))
    await node.wait_ready("fine")


async def test_metrics_count_starts_exits_and_probes(node: NodeHarness) -> None:
    from shiftnet.sdn.metrics import REGISTRY

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    starts = value("shiftnet_node_container_starts_total")
    errors = value("shiftnet_node_container_exits_total", reason="Error")
    probes = value("shiftnet_node_readiness_probes_total", kind="httpGet", result="success")
    await node.client.create(server_pod("m"))
    await node.client.create(script_pod("dies", "raise SystemExit(2)", restart_policy="Never"))
    await node.wait_ready("m")
    await node.wait_pod("dies", lambda p: p.status.phase == "Failed")
    assert value("shiftnet_node_container_starts_total") >= starts + 2
    assert value("shiftnet_node_container_exits_total", reason="Error") >= errors + 1
    assert (
        value("shiftnet_node_readiness_probes_total", kind="httpGet", result="success")
        >= probes + 1
    )
    assert value("shiftnet_node_pod_status_writes_total") > 0
    assert value("shiftnet_node_pods") >= 2
