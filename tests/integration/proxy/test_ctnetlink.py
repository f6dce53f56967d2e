"""Raw ctnetlink against the kernel, in a network namespace this test creates:
listing UDP entries (all, or kernel-filtered by address and port) and deleting them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from shiftnet.proxy.ctnetlink import Ctnetlink, Tuple

pytestmark = [pytest.mark.integration, pytest.mark.root]

T = TypeVar("T")


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"sn-ctnl{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        # any rule using conntrack makes the namespace track its flows
        rules = (
            "add table ip t; "
            "add chain ip t c { type filter hook output priority 0; ct state new counter; }"
        )
        subprocess.run(["ip", "netns", "exec", name, "nft", rules], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def inside(netns: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` on a thread that entered ``netns`` (setns moves only that thread)."""
    out: list[T] = []

    def run() -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
        try:
            assert libc.setns(fd, 0x40000000) == 0
        finally:
            os.close(fd)
        out.append(fn())

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    return out[0]


def flows(count: int, ports: int) -> list[int]:
    """``count`` UDP flows from distinct source ports to 127.0.0.1:9000.. (+ports); one TCP."""
    sources = []
    # Every socket stays open until all have sent: a closed one's source port could be
    # handed out again, and two flows with one 5-tuple are one conntrack entry.
    with contextlib.ExitStack() as stack:
        for i in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            s.sendto(b"x", ("127.0.0.1", 9000 + i % ports))
            sources.append(s.getsockname()[1])
    with socket.socket() as s, contextlib.suppress(OSError):  # a TCP entry: never listed
        s.settimeout(1)
        s.connect(("127.0.0.1", 9000))
    return sources


def test_list_filter_and_delete(netns: str) -> None:
    def work() -> tuple[int, int, int, int, int]:
        flows(300, 3)
        nl = Ctnetlink()
        try:
            every = nl.udp_entries()
            to_9001 = nl.udp_entries("127.0.0.1", 9001)
            to_port_9002 = nl.udp_entries(None, 9002)
            assert all(o.dport == 9001 and o.dst == "127.0.0.1" for o, _ in to_9001)
            assert all(r.src == "127.0.0.1" and r.sport == 9001 for _, r in to_9001)
            nl.delete_udp([o for o, _ in to_9001])
            nl.delete_udp([o for o, _ in to_9001[:5]])  # already gone: fine
            nl.delete_udp([Tuple("127.0.0.9", 1, "127.0.0.9", 2)])  # never existed: fine
            left = nl.udp_entries()
            return (
                len(every),
                len(to_9001),
                len(to_port_9002),
                len(left),
                len(nl.udp_entries("127.0.0.1", 9001)),
            )
        finally:
            nl.close()

    every, to_9001, to_9002, left, again = inside(netns, work)
    assert every == 300  # UDP only: the TCP entry is filtered out by the kernel
    assert to_9001 == 100 and to_9002 == 100
    assert left == 200 and again == 0
