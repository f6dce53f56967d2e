"""A UDP client that keeps sending from one source port, as a resolver or a game does.

    python -m tests.support.udp_stream HOST PORT SECONDS [INTERVAL]

Sends a datagram every INTERVAL seconds (default 0.02) for SECONDS seconds
from one bound socket and prints ``<CLOCK_MONOTONIC seconds> <reply>`` for
each reply, so a test in another network namespace (the clock is the same)
can see when the replies moved to another backend. Stops by itself.
"""

from __future__ import annotations

import socket
import sys
import time


def stream(host: str, port: int, seconds: float, interval: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    sock.settimeout(interval)
    print("ready", sock.getsockname()[1], flush=True)
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        sock.sendto(f"s{i}".encode(), (host, port))
        deadline = time.monotonic() + interval
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                data = sock.recv(2048)
            except TimeoutError:
                break
            except ConnectionRefusedError:  # an ICMP error from a gone endpoint
                print(f"{time.monotonic():.4f} refused", flush=True)
                continue
            print(f"{time.monotonic():.4f} {data.decode(errors='replace')}", flush=True)
    sock.close()
    print("done", flush=True)


if __name__ == "__main__":
    stream(
        sys.argv[1],
        int(sys.argv[2]),
        float(sys.argv[3]),
        float(sys.argv[4]) if len(sys.argv) > 4 else 0.02,
    )
