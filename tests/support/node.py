"""Node agent fixtures: a real agent on a fresh SQLite store, pods as real processes.

``NodeHarness`` starts a :class:`NodeAgent` (and optionally the master) on a
store in the test's tmp dir, creates pods whose commands are real Python
processes, and offers polling helpers that read the store as a user would.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from shiftnet.api import HostSubnet, Pod, parse_object
from shiftnet.client import Client
from shiftnet.sdn.agent import NodeAgent
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.pidfiles import process_start_time
from shiftnet.store import open_store
from shiftnet.store.base import Store
from tests.support.ports import worker_octet

REPO = Path(__file__).resolve().parents[2]
PODSERVER = REPO / "examples" / "demo" / "podserver.py"

T = TypeVar("T")


async def wait_for(
    fn: Callable[[], Awaitable[T | None]], timeout: float = 15.0, what: str = "condition"
) -> T:
    """Poll ``fn`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = await fn()
        if last:
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def dump_tasks() -> str:
    """Every pending task with its stack: what a hang is waiting for."""
    import io

    out = io.StringIO()
    for task in asyncio.all_tasks():
        task.print_stack(file=out)
    return out.getvalue()


def pid_alive(pid: int) -> bool:
    return process_start_time(pid) is not None


def group_alive(pgid: int) -> bool:
    """True while any process of the process group ``pgid`` exists (zombies count as gone)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2 :].split()
        if rest[0] != "Z" and int(rest[2]) == pgid:
            return True
    return False


def server_pod(
    name: str,
    *,
    namespace: str = "default",
    node: str | None = "node-a",
    labels: dict[str, str] | None = None,
    probe: dict[str, Any] | None = None,
    restart_policy: str = "Always",
    grace: int = 5,
    port: int = 8080,
) -> Pod:
    """A pod running the demo podserver on $POD_IP:$PORT with an httpGet readiness probe."""
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": grace,
        "containers": [
            {
                "name": "web",
                "command": [sys.executable, str(PODSERVER)],
                "ports": [{"name": "web", "containerPort": port}],
                "readinessProbe": probe
                if probe is not None
                else {"httpGet": {"path": "/healthz", "port": "web"}, "periodSeconds": 1},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "web"}},
            "spec": spec,
        }
    )  # type: ignore[return-value]


def script_pod(
    name: str,
    script: str,
    *,
    namespace: str = "default",
    node: str = "node-a",
    restart_policy: str = "Always",
    grace: int = 5,
    probe: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
) -> Pod:
    """A pod whose container runs ``python -c script``."""
    container: dict[str, Any] = {"name": "main", "command": [sys.executable, "-c", script]}
    if probe is not None:
        container["readinessProbe"] = probe
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if ports:
        container["ports"] = ports
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "nodeName": node,
                "restartPolicy": restart_policy,
                "terminationGracePeriodSeconds": grace,
                "containers": [container],
            },
        }
    )  # type: ignore[return-value]


class NodeHarness:
    def __init__(
        self,
        state_dir: Path,
        node_name: str = "node-a",
        with_master: bool = False,
        subnet: str | None = None,
    ):
        self.subnet = subnet or f"127.10.{worker_octet(7)}.0/24"  # apart from other workers'
        self.state_dir = state_dir
        self.node_name = node_name
        self.with_master = with_master
        self.store: Store = open_store(f"sqlite://{state_dir}/state.db")
        self.client = Client(self.store)
        self.agent: NodeAgent | None = None
        self.master: Any = None

    def config(self, **kw: Any) -> NodeConfig:
        kw.setdefault("backoff_initial", 0.2)
        kw.setdefault("backoff_max", 1.0)
        kw.setdefault("heartbeat_seconds", 2.0)
        return NodeConfig(node_name=self.node_name, state_dir=self.state_dir, **kw)

    async def start(self, **kw: Any) -> NodeAgent:
        if self.with_master and self.master is None:
            from shiftnet.master import Master
            from shiftnet.master.config import MasterConfig

            self.master = Master(self.store, MasterConfig.build("local"))
            await self.master.start()
        elif not self.with_master:
            hs = await self.client.try_get(HostSubnet, None, self.node_name)
            if hs is None:
                await self.client.create(
                    HostSubnet(
                        metadata={"name": self.node_name},  # type: ignore[arg-type]
                        host=self.node_name,
                        host_ip="127.0.0.1",
                        subnet=self.subnet,
                    )
                )
        self.agent = NodeAgent(self.store, self.config(**kw))
        await self.agent.start()
        await self.agent.wait_for_subnet(15)
        return self.agent

    async def stop_agent(self) -> None:
        if self.agent is not None:
            try:
                await asyncio.wait_for(self.agent.stop(), 40)
            except TimeoutError:
                raise AssertionError("agent.stop() hung:\n" + dump_tasks()) from None
            self.agent = None

    async def close(self) -> None:
        try:
            await self.stop_agent()
        finally:
            if self.master is not None:
                await self.master.stop()
            await self.store.close()

    # ------------------------------------------------------------ reading
    async def pod(self, name: str, namespace: str = "default") -> Pod | None:
        return await self.client.try_get(Pod, namespace, name)

    async def wait_pod(
        self,
        name: str,
        check: Callable[[Pod], bool],
        namespace: str = "default",
        timeout: float = 15,
    ) -> Pod:
        async def probe() -> Pod | None:
            p = await self.pod(name, namespace)
            return p if p is not None and check(p) else None

        return await wait_for(probe, timeout, f"pod {namespace}/{name}")

    async def wait_ready(self, name: str, namespace: str = "default", timeout: float = 15) -> Pod:
        return await self.wait_pod(name, lambda p: p.ready, namespace, timeout)

    def pids(self, name: str, namespace: str = "default") -> list[int]:
        assert self.agent is not None
        return self.agent.pod_pids().get((namespace, name), [])
