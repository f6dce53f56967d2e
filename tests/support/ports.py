"""Free loopback ports for test servers (never 80, 443 or 53)."""

from __future__ import annotations

import os
import random
import socket

from shiftnet.claims.probe import bound_loopback_addresses


def worker_index() -> int:
    """This pytest-xdist worker's number (0 without xdist): tests in parallel workers keep
    their fixed loopback addresses apart by it (``worker_octet``)."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdecimal() else 0


def worker_octet(base: int) -> int:
    """``base`` (below 100) moved to this worker's hundred: 7 is 7 in worker 0, 107 in 1."""
    return (base + 100 * worker_index()) % 250


_handed_out: set[int] = set()


def free_port(host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    """A port the kernel picks, never one this process was given before: a released port
    may be picked again at once, and a test asking for several (a router's HTTP, HTTPS
    and stats, a cluster's DNS) would get one twice."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError("no free port this process was not given before in 100 tries")


def free_cluster_network() -> str:
    """A ``127.X.0.0/16`` cluster network in which no socket on this machine is bound.

    Pods bind loopback addresses without configuring them, so ``ip addr`` never shows
    another cluster's pods; this asks the probe ``shiftnet up`` itself uses. A random
    pick alone collides with another cluster running meanwhile (its pod holds our
    pod's address and port, and our pod exits with "Address already in use").
    """
    used = {a.packed[1] for a in bound_loopback_addresses()}
    # A second octet of this worker's own (tests in parallel workers pick at once).
    workers = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    mine = range(100 + worker_index() % workers, 200, workers)
    return f"127.{random.choice([x for x in mine if x not in used])}.0.0/16"
