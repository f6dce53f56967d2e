"""Free loopback ports for test servers (never 80, 443 or 53)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
