"""A client that keeps asking one service while a test does hostile things elsewhere.

Run in a namespace (``ip netns exec NS python -m tests.support.steady_client ...``)::

    python -m tests.support.steady_client tcp HOST PORT MAX_SECONDS
    python -m tests.support.steady_client dns HOST PORT NAME MAX_SECONDS

It prints ``ready`` after its first success, then asks in a loop until its
standard input closes or MAX_SECONDS pass (the loop is always bounded), and
prints one JSON line: ``{"ok": n, "failed": n, "errors": [first few]}``. A TCP
request is connect + read the backend's greeting line; a DNS request is one
UDP A query that must get an answer with at least one address. A test starts
it in a namespace with :class:`SteadyClient`.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dns.exception
import dns.message
import dns.query
import dns.rdatatype

ROOT = Path(__file__).resolve().parents[2]


class SteadyClient:
    """This module run as a process in network namespace ``ns``; returns once it is ready."""

    def __init__(self, ns: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "tests.support.steady_client", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def finish(self) -> dict[str, Any]:
        """Stop asking; the counts ``{"ok", "failed", "errors"}``."""
        out, _ = self.proc.communicate(input="", timeout=60)
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _tcp_once(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=5) as s:
        s.settimeout(5)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(64)
            if not chunk:
                raise ConnectionError(f"closed after {data!r}")
            data += chunk


def _dns_once(host: str, port: int, name: str) -> None:
    answer = dns.query.udp(dns.message.make_query(name, "A"), host, port=port, timeout=3)
    addresses = [r for rrset in answer.answer if rrset.rdtype == dns.rdatatype.A for r in rrset]
    if not addresses:
        raise LookupError(f"no A record for {name} (rcode {answer.rcode()})")


def _stdin_closed() -> bool:
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(ready) and sys.stdin.readline() == ""


def main(argv: list[str]) -> None:
    kind, host, port_text, *rest = argv
    port = int(port_text)
    if kind == "tcp":
        max_seconds = float(rest[0])

        def once() -> None:
            _tcp_once(host, port)
    elif kind == "dns":
        name, max_seconds = rest[0], float(rest[1])

        def once() -> None:
            _dns_once(host, port, name)
    else:
        raise SystemExit(f"unknown kind {kind}")
    deadline = time.monotonic() + max_seconds
    while True:  # the first success says the service works before the test starts
        try:
            once()
            break
        except (OSError, LookupError, dns.exception.DNSException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    print("ready", flush=True)
    ok, failed, errors = 1, 0, []
    while time.monotonic() < deadline and not _stdin_closed():
        try:
            once()
            ok += 1
        except (OSError, LookupError, dns.exception.DNSException) as err:
            failed += 1
            if len(errors) < 5:
                errors.append(f"{type(err).__name__}: {err}")
        time.sleep(0.005)
    print(json.dumps({"ok": ok, "failed": failed, "errors": errors}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
