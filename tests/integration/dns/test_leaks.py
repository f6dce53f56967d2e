"""Thousands of short TCP connections and UDP queries at a real ``shiftnet dns``:
its descriptors and RSS come back to where they started.

TCP clients end in every ordinary way: a query read to the end then closed,
a query sent and closed without reading the answer, a connect closed at once,
and a reset.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import dns.message
import pytest
from tests.support.dns_process import NAME, ask, dns_process
from tests.support.leaks import LeakProbe

pytestmark = pytest.mark.integration

TCP_CONNECTIONS = 3000
UDP_QUERIES = 5000
RSS_GROWTH_KIB = 8 * 1024  # far below what 3,000 leaked connections' objects would cost


def short_connection(port: int, way: int, wire: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        if way == 1:  # the query, then gone without reading the answer
            s.sendall(len(wire).to_bytes(2, "big") + wire)
        elif way == 2:  # reset instead of FIN
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # way 3: connect and close at once


def test_tcp_and_udp_clients_leave_no_descriptors(tmp_path: Path) -> None:
    wire = dns.message.make_query(NAME, "A").to_wire()
    with dns_process(tmp_path) as (pid, port):
        for _ in range(100):  # warm-up: first-use allocations, answer memo
            ask(port, tcp=True)
            ask(port, tcp=False)
        probe = LeakProbe(pid, name="shiftnet dns", rss_growth_kib=RSS_GROWTH_KIB)
        for i in range(TCP_CONNECTIONS):
            if i % 4 == 0:
                ask(port, tcp=True)
            else:
                short_connection(port, i % 4, wire)
        for _ in range(UDP_QUERIES):
            ask(port, tcp=False)
        probe.assert_settled()
        print(probe.summary())
