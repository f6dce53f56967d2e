"""A hostile tenant against the user-space proxy, which binds listeners from Service fields.

A real ``shiftnet proxy --mode userspace`` process runs in a network namespace
this test creates (its node; backends sit behind it), serving a good Service
on a 127.x ClusterIP read from an EndpointSlice, while a client in the same
namespace keeps connecting to it. A tenant whose namespace sorts first writes
every hostile Service, Endpoints and EndpointSlice of
tests/support/hostile_services.py on 127.x ClusterIPs (so its listeners really
bind): through the validating client, then around it straight into the store.
The good Service loses no request and the proxy logs no traceback; once the
tenant's objects are deleted, the proxy's open descriptors are back at their
baseline (every tenant listener closed); written again, a restarted proxy
starts cleanly on them and serves the good Service. In a namespace, a hostile
address or port (0.0.0.0, port 80, node port 22) binds nothing of the host's.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.hostile_services import cases, write_cases
from tests.support.leaks import LeakProbe
from tests.support.proxy_cluster import endpoint_slice, service
from tests.support.proxy_netns import ROOT, Topology
from tests.support.steady_client import SteadyClient

from shiftnet.client import Client
from shiftnet.sdn.threadns import entered
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 not installed"),
]

PORT = 8080
VIP = "127.30.0.10"
SENTINEL = "127.30.0.11"  # written last: once it answers, the proxy has seen every case


@pytest.fixture
def topo() -> Iterator[Topology]:
    t = Topology().create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


class ProxyProcess:
    """``shiftnet proxy --mode userspace`` inside ``ns``; ready once it says it runs."""

    def __init__(self, ns: str, tmp: Path, n: int) -> None:
        self.log = tmp / f"proxy-{n}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
        env.update(SHIFTNET_HOME=str(tmp), PYTHONPATH=str(ROOT / "src"))
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-m", "shiftnet.cli.main",
                 "--store", f"sqlite:///{tmp}/state.db", "proxy", "--mode", "userspace",
                 "--min-sync-interval", "0"],
                env=env, stdout=subprocess.PIPE, stderr=err, text=True,
            )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "service proxy running" in line, self.text()
        self.pid = self.proc.pid  # ip netns exec execs the command: this is the proxy

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        """Ctrl-C, as a user stops it; its exit status."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def answers(ns: str, ip: str, port: int) -> bool:
    """Whether ``ip:port`` inside ``ns`` accepts and greets (a thread steps into ``ns``)."""
    with entered(ns):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.settimeout(2)
        sock.connect((ip, port))
        return sock.recv(16).endswith(b"\n")
    except OSError:
        return False
    finally:
        sock.close()


async def wait_answers(ns: str, ip: str, port: int, want: bool = True, timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while await asyncio.to_thread(answers, ns, ip, port) != want:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{ip}:{port} {'never' if want else 'still'} answers")
        await asyncio.sleep(0.1)


async def test_hostile_tenant_does_not_disturb_the_userspace_proxy(
    topo: Topology, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    backends = [(topo.backend_ip(i), PORT) for i in (1, 2, 3)]
    hostile = list(cases(topo.backend_ip(1), PORT, prefix="127.30", good_vip=VIP))
    procs: list[ProxyProcess] = []
    steady: SteadyClient | None = None

    async def sentinel(present: bool) -> None:
        if present:
            await client.create(service("last", SENTINEL, 80))
            await client.create(endpoint_slice("last", backends[:1]))
        else:
            await store.delete("endpointslices", "default", "last-s1")
            await store.delete("services", "default", "last")
        await wait_answers(topo.node, SENTINEL, 80, want=present)

    async def delete_tenant() -> None:
        for resource in ("endpointslices", "endpoints", "services"):
            for obj in (await store.list(resource)).items:
                meta = obj.get("metadata", {})
                if meta.get("namespace") != "default":
                    await store.delete(resource, meta.get("namespace"), meta.get("name", ""))

    try:
        await client.create(service("web", VIP, 80))
        await client.create(endpoint_slice("web", backends))
        first = ProxyProcess(topo.node, tmp_path, 1)
        procs.append(first)
        await wait_answers(topo.node, VIP, 80)
        for _ in range(20):  # warm-up: first-use buffers are not a leak
            assert await asyncio.to_thread(answers, topo.node, VIP, 80)
        probe = LeakProbe(first.pid, name="shiftnet proxy", rss_growth_kib=None)
        steady = await asyncio.to_thread(SteadyClient, topo.node, "tcp", VIP, "80", "240")

        written = await write_cases(client, store, hostile)
        assert written.refused > written.accepted, written
        assert written.raw > 0
        await sentinel(True)
        await asyncio.sleep(1.0)  # a few more syncs under the client

        result = await asyncio.to_thread(steady.finish)
        steady = None
        assert result["failed"] == 0, result
        assert result["ok"] > 50, result
        assert first.proc.poll() is None, first.text()[-2000:]
        log = first.text()
        assert "Traceback" not in log, log[log.index("Traceback") :][:3000]
        zoned = [c for c in written.cases if c.field == "slice.endpoints[0].zone"]
        tenant_vip = zoned[0].service["spec"]["clusterIP"]  # any zone is valid: it serves
        assert await asyncio.to_thread(answers, topo.node, tenant_vip, 80)

        # Every tenant object gone: every tenant listener closed, nothing left open.
        await delete_tenant()
        await sentinel(False)
        await probe.settled(settle=15)

        # Written again, a restarted proxy starts cleanly on them and serves; the
        # first Service it meets claims the unspecified address on port 80 and sends
        # to a dead port (a listener there would take every ClusterIP's port 80).
        await write_cases(client, store, hostile)
        wildcard = service("a-any", "0.0.0.0", 80, namespace="a-tenant").to_dict()
        await store.create("services", wildcard)
        dead = endpoint_slice("a-any", [(topo.backend_ip(1), 9)], namespace="a-tenant")
        await store.create("endpointslices", dead.to_dict())
        assert first.stop() in (0, 130), first.text()[-2000:]
        procs.remove(first)
        again = ProxyProcess(topo.node, tmp_path, 2)
        procs.append(again)
        await wait_answers(topo.node, VIP, 80)
        counter = topo.python(topo.node, "count", VIP, "80", "30")
        out, _ = await asyncio.to_thread(counter.communicate, timeout=120)
        counts: dict[str, Any] = json.loads(out)
        assert counter.returncode == 0 and sum(counts.values()) == 30, counts
        assert again.proc.poll() is None, again.text()[-2000:]
        assert "Traceback" not in again.text(), again.text()[-3000:]
    finally:
        if steady is not None:
            steady.kill()
        for p in procs:
            p.stop()
        await store.close()
