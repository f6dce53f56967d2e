"""Free loopback ports for test servers (never 80, 443 or 53)."""

from __future__ import annotations

import random
import socket

from shiftnet.claims.probe import bound_loopback_addresses


def free_port(host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def free_cluster_network() -> str:
    """A ``127.X.0.0/16`` cluster network in which no socket on this machine is bound.

    Pods bind loopback addresses without configuring them, so ``ip addr`` never shows
    another cluster's pods; this asks the probe ``shiftnet up`` itself uses. A random
    pick alone collides with another cluster running meanwhile (its pod holds our
    pod's address and port, and our pod exits with "Address already in use").
    """
    used = {a.packed[1] for a in bound_loopback_addresses()}
    return f"127.{random.choice([x for x in range(100, 200) if x not in used])}.0.0/16"
