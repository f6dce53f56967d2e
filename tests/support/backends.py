"""Real HTTP and HTTPS backends on loopback that answer with their own identity.

Each backend binds its own 127.x.y.z address (distinct "pod IPs") on a free
port, answers every request with ``<name>`` in the body and an
``X-Backend: <name>`` header, and echoes the request headers it saw as JSON in
``X-Seen-Headers`` so tests can check forwarding headers. Threaded so health
checks and a load test can run at once.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.ports import worker_octet
from tests.support.tls import KeyPair


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _answer(self) -> None:
        name = self.server.identity
        self.server.hits += 1
        body = f"{name}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Backend", name)
        self.send_header("X-Seen-Path", self.path)
        self.send_header("X-Seen-Headers", json.dumps(dict(self.headers.items())))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_HEAD = do_OPTIONS = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    identity = ""
    hits = 0

    def handle_error(self, request: object, client_address: object) -> None:
        """Health checks connect and close at once; that is not an error worth printing."""


@dataclass
class Backend:
    """One running pod stand-in."""

    name: str
    ip: str
    port: int
    tls: KeyPair | None = None
    _server: _Server | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def hits(self) -> int:
        return self._server.hits if self._server else 0

    def start(self) -> Backend:
        srv = _Server((self.ip, self.port), _Handler)
        srv.identity = self.name
        self.port = srv.server_address[1]
        if self.tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            import tempfile

            with tempfile.TemporaryDirectory() as d:
                cert, key = self.tls.write(Path(d), "pod")
                ctx.load_cert_chain(cert, key)
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        self._server = srv
        self._thread = threading.Thread(
            target=srv.serve_forever, name=f"backend-{self.name}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def free_port_on(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


_next_octet = [10]
_lock = threading.Lock()


def pod_ip() -> str:
    """A fresh loopback pod address (127.10.x.y), distinct for each call in this process
    and apart from other pytest workers' (each has its own 50 values of x)."""
    with _lock:
        _next_octet[0] += 1
        n = _next_octet[0]
    return f"127.10.{worker_octet((n // 250) % 50)}.{n % 250 + 1}"


@contextlib.contextmanager
def backends(
    *names: str, tls: KeyPair | None = None, port: int | None = None
) -> Iterator[list[Backend]]:
    """Start one backend per name on its own 127.10.x.y address (same port if given)."""
    started: list[Backend] = []
    try:
        for name in names:
            ip = pod_ip()
            b = Backend(name, ip, port if port is not None else 0, tls=tls)
            started.append(b.start())
        yield started
    finally:
        for b in started:
            b.stop()
