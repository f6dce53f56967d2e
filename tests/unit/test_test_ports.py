"""The test suite's own port picks: a process never gets the same port twice.

Why: the kernel may hand out a port just released again at once (about one pick
in twenty repeats an earlier one over 2,000 picks on this machine), and a test
that asks for several (a cluster's router, DNS and API ports) then starts two
listeners on one port.
"""

from __future__ import annotations

import socket

from tests.support.ports import free_port


def test_two_thousand_picks_are_two_thousand_ports() -> None:
    tcp = [free_port() for _ in range(1000)]
    udp = [free_port(kind=socket.SOCK_DGRAM) for _ in range(1000)]
    assert len(set(tcp + udp)) == 2000
