"""A real ``shiftnet dns`` process on a free loopback port, with one Service to ask for.

The server runs as its own process so that tests measure its descriptors by
pid and so that thousands of client sockets stay in the test's process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dns.message
import dns.query
import dns.rcode

from shiftnet.client import Client
from shiftnet.store import open_store
from tests.support.dns import service
from tests.support.unbound import free_udp_tcp_port

NAME = "web.default.svc.cluster.local"
CLUSTER_IP = "127.30.0.10"


async def _seed(url: str) -> None:
    store = open_store(url)
    try:
        await Client(store).create(
            service("web", cluster_ip=CLUSTER_IP, ports=[{"name": "http", "port": 80}])
        )
    finally:
        await store.close()


def ask(port: int, *, tcp: bool, timeout: float = 2) -> dns.message.Message:
    """One A query for the seeded Service; raises if it is not answered correctly."""
    q = dns.message.make_query(NAME, "A")
    if tcp:
        m = dns.query.tcp(q, "127.0.0.1", port=port, timeout=timeout)
    else:
        m = dns.query.udp(q, "127.0.0.1", port=port, timeout=timeout)
    assert m.rcode() == dns.rcode.NOERROR and m.answer, m.to_text()
    return m


@contextlib.contextmanager
def dns_process(tmp: Path, *args: str) -> Iterator[tuple[int, int]]:
    """``shiftnet dns ARGS`` on a free port; yields (pid, port) once it answers."""
    url = f"sqlite:///{tmp}/state.db"
    asyncio.run(_seed(url))
    port = free_udp_tcp_port()
    log = tmp / "dns.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env.update(SHIFTNET_HOME=str(tmp), SHIFTNET_STORE=url)
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "shiftnet.cli.main", "dns",
             "--listen", f"127.0.0.1:{port}", *args],
            env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                ask(port, tcp=False, timeout=0.5)
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dns did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield proc.pid, port
        assert proc.poll() is None, f"dns died: {log.read_text()[-2000:]}"
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
