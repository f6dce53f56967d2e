"""DNS over TCP under idle clients (RFC 7766 6.2.3): idle connections cannot lock
legitimate TCP clients out, they are closed after the idle timeout, and at the
connection limit the longest idle one makes room for a new one.

The server is a real ``shiftnet dns`` process; the idle clients are plain
sockets in the test's process (2,000 of them stay well under its 20,000
descriptor limit).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import dns.message
import pytest
from tests.support.dns_process import NAME, ask, dns_process
from tests.support.leaks import LeakProbe

pytestmark = pytest.mark.integration

IDLE_CLIENTS = 2000
QUERIES = 300
LIMIT = 256  # the default --max-tcp-connections


@contextlib.contextmanager
def idle_clients(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that never send a byte; closed on exit."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        yield socks
    finally:
        for s in socks:
            s.close()


def closed_by_server(sock: socket.socket) -> bool:
    """The server closed it: readable with EOF (or reset)."""
    sock.setblocking(False)  # a socket with a timeout would wait for it
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def query_on(sock: socket.socket) -> bool:
    """One framed query on an open connection; True when it is answered."""
    wire = dns.message.make_query(NAME, "A").to_wire()
    try:
        sock.settimeout(2)
        sock.sendall(len(wire).to_bytes(2, "big") + wire)
        head = recv_exactly(sock, 2)
        return len(recv_exactly(sock, int.from_bytes(head, "big"))) > 0
    except (OSError, EOFError):
        return False


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("closed mid-message")
        data += chunk
    return data


def test_idle_connections_do_not_lock_out_tcp_queries(tmp_path: Path) -> None:
    with dns_process(tmp_path, "--tcp-idle-timeout", "60") as (pid, port):
        probe = LeakProbe(pid, name="shiftnet dns", fd_slack=LIMIT + 8, rss_growth_kib=None)
        with idle_clients(port, IDLE_CLIENTS) as idle:
            failed = 0
            for _ in range(QUERIES):
                try:
                    # 5 s: a refused or evicted client fails at once; on a loaded machine
                    # an answer alone took over 2 s once, next to 2,000 idle clients
                    ask(port, tcp=True, timeout=5)
                except Exception:
                    failed += 1
            assert failed == 0, f"{failed} of {QUERIES} TCP queries failed next to idle clients"
            assert probe.problem() is None  # never more than the limit held open
            time.sleep(0.5)
            evicted = sum(closed_by_server(s) for s in idle)
            assert evicted >= IDLE_CLIENTS - LIMIT, f"only {evicted} idle clients were closed"
        ask(port, tcp=False)  # UDP kept serving too


def test_idle_connections_are_closed_after_the_timeout(tmp_path: Path) -> None:
    with dns_process(tmp_path, "--tcp-idle-timeout", "1") as (pid, port):
        probe = LeakProbe(pid, name="shiftnet dns", rss_growth_kib=None)
        with idle_clients(port, 100) as idle:
            answered = [s for s in idle[:20] if query_on(s)]  # some had one query first
            assert len(answered) == 20
            time.sleep(0.5)
            assert not any(closed_by_server(s) for s in idle), "closed before the timeout"
            deadline = time.monotonic() + 5
            while not all(closed_by_server(s) for s in idle):
                assert time.monotonic() < deadline, "idle clients still open 5 s after 1 s"
                time.sleep(0.1)
        probe.assert_settled(5)


def test_at_the_limit_the_longest_idle_connection_makes_room(tmp_path: Path) -> None:
    with (
        dns_process(tmp_path, "--max-tcp-connections", "8", "--tcp-idle-timeout", "60") as (
            _,
            port,
        ),
        idle_clients(port, 8) as first,
    ):
        for s in first:  # each is admitted and answered, in this order
            assert query_on(s)
        assert query_on(first[0])  # the first is now the most recently active
        with idle_clients(port, 1) as (newcomer,):
            assert query_on(newcomer)
            time.sleep(0.2)
            assert closed_by_server(first[1]), "the longest idle client was not closed"
            assert not closed_by_server(first[0])
            assert all(query_on(s) for s in [first[0], *first[2:]])
