#!/usr/bin/env python3
"""A tiny HTTP server for demo pods: says which pod answered.

Binds $POD_IP:$PORT (set by the shiftnet node agent) and replies to every
GET with ``pod=<name> ns=<namespace> ip=<ip> path=<path>``. ``/healthz``
answers 200 once the server is up (the readiness probe); ``/fail`` makes
later ``/healthz`` calls fail, to watch a pod leave its Service's endpoints,
and ``/recover`` undoes it. With ``TLS_PORT``, ``TLS_CERT`` and ``TLS_KEY``
set it also serves HTTPS on that port (for passthrough and re-encrypt
Routes). Standard library only, so any python3 can run it.
"""

from __future__ import annotations

import os
import signal
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POD = os.environ.get("POD_NAME", "unknown")
NAMESPACE = os.environ.get("POD_NAMESPACE", "default")
IP = os.environ.get("POD_IP", "127.0.0.1")
PORT = int(os.environ.get("PORT", "8080"))
HEALTHY = {"ok": True}


class Handler(BaseHTTPRequestHandler):
    server_version = "podserver/1"

    def do_GET(self) -> None:  # the stdlib names the handler so
        if self.path == "/healthz":
            self._reply(200 if HEALTHY["ok"] else 503, "ok" if HEALTHY["ok"] else "failing")
            return
        if self.path == "/fail":
            HEALTHY["ok"] = False
        elif self.path == "/recover":
            HEALTHY["ok"] = True
        text = f"pod={POD} ns={NAMESPACE} ip={IP} path={self.path}"
        greeting = self.headers.get("X-Greeting")
        if greeting is not None:  # set by the router (examples/demo/50-headers.yaml)
            text += f" greeting={greeting!r}"
        self._reply(200, text)

    def _reply(self, code: int, text: str) -> None:
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Pod", POD)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt: str, *args: object) -> None:
        if self.path == "/healthz":
            return  # probes every second would drown the interesting lines
        sys.stdout.write(f"{self.address_string()} {fmt % args}\n")
        sys.stdout.flush()


def serve_tls(port: int, cert: str, key: str) -> None:
    tls_server = ThreadingHTTPServer((IP, port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    tls_server.socket = ctx.wrap_socket(tls_server.socket, server_side=True)
    print(f"podserver pod={POD} ns={NAMESPACE} listening on {IP}:{port} (TLS)", flush=True)
    threading.Thread(target=tls_server.serve_forever, daemon=True).start()


def main() -> None:
    server = ThreadingHTTPServer((IP, PORT), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tls_port = os.environ.get("TLS_PORT")
    if tls_port:
        serve_tls(int(tls_port), os.environ["TLS_CERT"], os.environ["TLS_KEY"])
    print(f"podserver pod={POD} ns={NAMESPACE} listening on {IP}:{PORT}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
