"""100,000 random and mutated packets at a live ``shiftnet dns`` process: it never dies or hangs.

The server runs as its own process (the real CLI), so a crash is a dead
process, not a swallowed exception. After every batch a valid query must be
answered; at the end the log must hold no "query failed" line (the guard that
keeps the loop alive logs every exception it catches).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dns.exception
import dns.message
import dns.query
import dns.rcode
import pytest
from tests.support.dns import endpoints, headless, service
from tests.support.dns_fuzz import SEED_NAMES, SEED_TYPES, UNKNOWN_SEED_NAMES, packets
from tests.support.unbound import free_udp_tcp_port

from shiftnet.api import ClusterNetwork, Pod
from shiftnet.client import Client
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

COUNT = 100_000
BATCH = 1000
NAME = "web.default.svc.cluster.local"


async def _seed(url: str) -> None:
    store = open_store(url)
    client = Client(store)
    await client.create(
        service("web", cluster_ip="127.30.0.10", ports=[{"name": "http", "port": 80}])
    )
    await client.create(headless("db", ports=[{"name": "pg", "port": 5432}]))
    await client.create(
        endpoints(
            "db",
            addresses=[{"ip": f"127.10.0.{i + 1}", "hostname": f"db-{i}"} for i in range(40)],
            ports=[{"name": "pg", "port": 5432}],
        )
    )
    # what the newer answers are made from: the cluster's networks (reverse zones),
    # verified pod records, an ExternalName, dual-stack and IPv6 endpoints
    await client.create(
        ClusterNetwork.model_validate(
            {
                "metadata": {
                    "name": "default",
                    "annotations": {"shiftnet.io/secondary-service-network": "fd00:96::/112"},
                },
                "network": "10.3.0.0/16",
                "hostsubnetlength": 8,
                "clusterNetworks": [{"CIDR": "10.3.0.0/16", "hostSubnetLength": 8}],
                "serviceNetwork": "127.30.0.0/16",
            }
        )
    )
    for name, ip in (("cart", "10.3.0.55"), ("till", "fd00:3::56")):
        await client.create(
            Pod.model_validate(
                {
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                    "status": {"phase": "Running", "podIP": ip},
                }
            )
        )
    await client.create(
        service("ext", cluster_ip=None, type="ExternalName", externalName="www.example.com")
    )
    await client.create(
        service(
            "dual",
            cluster_ip="127.30.0.30",
            clusterIPs=["127.30.0.30", "fd00:96::30"],
            ipFamilies=["IPv4", "IPv6"],
            ipFamilyPolicy="PreferDualStack",
            ports=[{"name": "http", "port": 80}],
        )
    )
    await client.create(headless("v6", ports=[{"name": "http", "port": 80}]))
    await client.create(
        endpoints(
            "v6",
            addresses=[{"ip": "fd00:3::56"}, {"ip": "10.3.0.55"}],
            ports=[{"name": "http", "port": 80}],
        )
    )
    await store.close()


@pytest.fixture
def dns_process(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    url = f"sqlite:///{tmp_path}/state.db"
    asyncio.run(_seed(url))
    port = free_udp_tcp_port()
    log = tmp_path / "dns.log"
    env = dict(os.environ, SHIFTNET_HOME=str(tmp_path), SHIFTNET_STORE=url)
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "shiftnet.cli.main", "-v", "dns",
             "--listen", f"127.0.0.1:{port}", "--pods", "verified", "--wildcards"],
            env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if alive(port).answer:
                    break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dns did not start: {log.read_text()}") from None
                time.sleep(0.1)
        yield port, log
        assert proc.poll() is None, f"server died: {log.read_text()[-2000:]}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_fuzz_server_holds_data_for_every_seed_name(dns_process: tuple[int, Path]) -> None:
    """Mutations start from the seeds: each must reach the code that answers it, not a
    REFUSED or NXDOMAIN for want of data."""
    port, _ = dns_process
    for name in SEED_NAMES:
        rcodes = {}
        for rdtype in SEED_TYPES:
            if rdtype == "AXFR":
                continue
            q = dns.message.make_query(name, rdtype)
            rcodes[rdtype] = dns.query.udp(q, "127.0.0.1", port=port, timeout=2).rcode()
        answered = dns.rcode.NOERROR in rcodes.values()
        assert answered == (name not in UNKNOWN_SEED_NAMES), (name, rcodes)


def alive(port: int, tcp: bool = False) -> dns.message.Message:
    """A valid query must still be answered correctly (3 tries of 2 s)."""
    q = dns.message.make_query(NAME, "A")
    for attempt in range(3):
        try:
            if tcp:
                m = dns.query.tcp(q, "127.0.0.1", port=port, timeout=2)
            else:
                m = dns.query.udp(q, "127.0.0.1", port=port, timeout=2)
            assert m.rcode() == dns.rcode.NOERROR
            return m
        except dns.exception.Timeout:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def test_udp_fuzz_never_crashes_or_hangs(dns_process: tuple[int, Path]) -> None:
    port, log = dns_process
    rng = random.Random(3)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    replies = sent = 0
    try:
        for i, pkt in enumerate(packets(COUNT, seed=11)):
            if i % 5000 == 4999:  # oversized datagrams, up to the loopback maximum
                pkt = pkt + rng.randbytes(rng.randrange(8000, 65000))
            try:
                sock.send(pkt)
                sent += 1
            except (BlockingIOError, ConnectionRefusedError):
                pass
            if i % BATCH == BATCH - 1:
                assert alive(port).answer, f"no answer after {i + 1} packets"
                while True:
                    try:
                        sock.recv(65535)
                        replies += 1
                    except (BlockingIOError, ConnectionRefusedError):
                        break
    finally:
        sock.close()
    assert sent >= COUNT * 0.99
    assert replies > COUNT // 4, f"only {replies} replies to {sent} packets"
    text = log.read_text()
    assert "query failed" not in text and "Traceback" not in text, text[-3000:]


def test_tcp_fuzz_never_crashes_or_hangs(dns_process: tuple[int, Path]) -> None:
    port, log = dns_process
    rng = random.Random(5)
    frames = list(packets(3000, seed=13))
    for conn in range(300):
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            mode = conn % 4
            if mode == 0:  # garbage frames, each honestly length-prefixed, then a valid query
                for pkt in rng.sample(frames, 10):
                    s.sendall(len(pkt).to_bytes(2, "big") + pkt)
                q = dns.message.make_query(NAME, "A")
                wire = q.to_wire()
                s.sendall(len(wire).to_bytes(2, "big") + wire)
                s.settimeout(3)
                buf = b""
                try:
                    while True:  # read every reply until the one for our id
                        chunk = s.recv(65535)
                        if not chunk:
                            break
                        buf += chunk
                        found = False
                        while len(buf) >= 2 and len(buf) >= 2 + int.from_bytes(buf[:2], "big"):
                            n = int.from_bytes(buf[:2], "big")
                            msg, buf = buf[2 : 2 + n], buf[2 + n :]
                            if msg[:2] == wire[:2] and msg[2] & 0x80 and msg[3] & 0xF == 0:
                                found = True
                        if found:
                            break
                except TimeoutError:
                    pytest.fail(f"connection {conn}: no answer to a valid query after garbage")
            elif mode == 1:  # a length that lies (longer than what follows), then hang up
                s.sendall(b"\xff\xff" + rng.randbytes(rng.randrange(100)))
            elif mode == 2:  # pure noise
                s.sendall(rng.randbytes(rng.randrange(1, 3000)))
            else:  # half a length prefix
                s.sendall(b"\x00")
    assert alive(port, tcp=True).answer
    assert alive(port).answer
    text = log.read_text()
    assert "tcp failed" not in text and "Traceback" not in text, text[-3000:]
