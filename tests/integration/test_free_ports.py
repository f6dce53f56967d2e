"""Port-0 endpoints never take a port the cluster claimed for a later listener."""

from __future__ import annotations

import os
import socket

import pytest

from shiftnet.free_ports import bind_avoiding
from shiftnet.metrics_endpoint import MetricsEndpoint

pytestmark = pytest.mark.integration

# half the ports a port-0 bind is handed (Linux gives bind() the odd ports of
# 32768-60999 first): without the retry, about every second endpoint lands on one
CLAIMED = frozenset(range(32769, 47000, 2))


def _bind() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_bind_avoiding_skips_claimed_ports_and_releases_the_refused_picks() -> None:
    before = _fds()
    for _ in range(20):
        s = bind_avoiding(_bind, lambda x: int(x.getsockname()[1]), lambda x: x.close(), CLAIMED)
        try:
            assert s.getsockname()[1] not in CLAIMED
        finally:
            s.close()
    assert _fds() == before


def test_bind_avoiding_gives_up_with_an_os_error() -> None:
    every = frozenset(range(65536))
    before = _fds()
    with pytest.raises(OSError, match="no free port outside"):
        bind_avoiding(_bind, lambda x: int(x.getsockname()[1]), lambda x: x.close(), every, 5)
    assert _fds() == before


def test_a_metrics_endpoint_on_port_0_never_takes_a_claimed_port() -> None:
    for _ in range(6):
        endpoint = MetricsEndpoint("127.0.0.1:0", [], avoid=CLAIMED)
        try:
            assert endpoint.port not in CLAIMED
        finally:
            endpoint.stop()
