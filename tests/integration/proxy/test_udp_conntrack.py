"""UDP conntrack cleanup in the kernel modes, in network namespaces this test creates.

A client keeps sending to a UDP service from one source port. The kernel
NATs that flow once and keeps the decision in its conntrack entry, so without
cleanup the client stays with its first endpoint for as long as it keeps
sending (here the removed backend keeps answering, as a terminating pod
does). With cleanup, the replies come from the new endpoint within a second
of the change.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from tests.support.proxy_cluster import backends_of, endpoints, put, service, wait_until
from tests.support.proxy_netns import ROOT, Topology

from shiftnet.client import Client
from shiftnet.proxy import ProxyConfig, ServiceProxy
from shiftnet.proxy.kernel import KernelConfig
from shiftnet.store import open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed"),
]

PORT = 5353


def netns_python(ns: str) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, "-m"]


VIP = "172.30.0.53"


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    t = Topology(backends=2).create()
    try:
        t.start_backends(PORT)
        yield t
    finally:
        t.destroy()


class Stream:
    """The client process's replies, read on a thread: (monotonic time, backend name)."""

    def __init__(self, topo: Topology, seconds: float) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [*netns_python(topo.client), "tests.support.udp_stream", VIP, "53", str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        topo.procs.append(self.proc)
        self.replies: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0][0].isdigit():
                self.replies.append((float(parts[0]), parts[1].split(":", 1)[0]))

    def since(self, t: float) -> list[str]:
        return [name for when, name in list(self.replies) if when >= t]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.thread.join(5)


@pytest.mark.parametrize("mode", ["nftables", "iptables"])
async def test_udp_client_moves_to_new_endpoint_within_a_second(topo, tmp_path, mode) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    b1, b2 = (topo.backend_ip(1), PORT), (topo.backend_ip(2), PORT)
    await put(client, service("dns", VIP, 53, protocol="UDP"))
    await put(client, endpoints("dns", [b1], protocol="UDP"))
    cfg = ProxyConfig(
        mode=mode, min_sync_interval=0.0, kernel=KernelConfig(mode=mode, netns=topo.node)
    )
    proxy = ServiceProxy(store, cfg)
    stream: Stream | None = None
    try:
        await proxy.start()
        await wait_until(
            lambda: backends_of(proxy, "default", "dns") == {b1} and proxy.kernel.in_sync
        )
        stream = Stream(topo, seconds=20)
        await wait_until(lambda: len(stream.since(0)) >= 10, what="replies from b1")
        assert set(stream.since(0)) == {"b1"}

        await put(client, endpoints("dns", [b2], protocol="UDP"))
        changed = time.monotonic()
        await wait_until(lambda: backends_of(proxy, "default", "dns") == {b2}, what="the change")
        await asyncio.sleep(1.5)
        after = stream.since(changed + 1.0)
        assert after, "no replies in the second after the change"
        assert set(after) == {"b2"}, f"{mode}: replies a second after the change: {set(after)}"
        first_b2 = next(t for t, name in stream.replies if name == "b2")
        assert first_b2 - changed < 1.0
    finally:
        if stream is not None:
            stream.stop()
        await proxy.stop(cleanup=True)
        await store.close()
