"""Thousands of short HTTPS requests leave the API server's descriptors and RSS where they were."""

from __future__ import annotations

import socket
import ssl
from concurrent.futures import ThreadPoolExecutor

import pytest
from tests.support.apiserver import APIServerProcess
from tests.support.leaks import LeakProbe

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REQUESTS = 3000
WORKERS = 8
PATHS = (
    "/api/v1/namespaces/default/services",  # a list
    "/api/v1/namespaces/default/services?watch=true",  # a watch the client abandons
    "/api/v1/namespaces/default/services/nope",  # a 404 Status
    "/apis/route.openshift.io/v1",  # discovery
)


def one_request(api: APIServerProcess, ctx: ssl.SSLContext, n: int, token: str) -> bytes:
    """A fresh TCP+TLS connection per request, some without the token, some cut short."""
    path = PATHS[n % len(PATHS)]
    auth = f"Authorization: Bearer {token}\r\n" if n % 5 else ""
    raw = socket.create_connection(("127.0.0.1", api.port), timeout=30)
    with raw, ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n".encode())
        if n % 7 == 0 or "watch" in path:
            return tls.recv(16)  # the client goes away before reading (all of) the answer
        chunks = []
        while chunk := tls.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def run_round(api: APIServerProcess, count: int) -> list[bytes]:
    ctx = ssl.create_default_context(cafile=api.ca)
    token = api.token
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(lambda n: one_request(api, ctx, n, token), range(count)))


def test_short_https_requests_leak_no_descriptors_or_memory(api: APIServerProcess) -> None:
    run_round(api, 300)  # warm-up: imports, caches, TLS session state
    probe = LeakProbe(api.pid, name="shiftnet apiserver")
    answers = run_round(api, REQUESTS)
    full = [a for n, a in enumerate(answers) if n % 7 and "watch" not in PATHS[n % len(PATHS)]]
    assert all(a.startswith(b"HTTP/1.1 ") for a in answers)
    assert (
        sum(b" 200 OK" in a.split(b"\r\n", 1)[0] for a in full) > REQUESTS // 3
    )  # lists and discovery
    assert sum(b" 401 " in a.split(b"\r\n", 1)[0] for a in full) > REQUESTS // 10
    probe.assert_settled()
    print(probe.summary())


def test_abandoned_watches_end_with_their_clients(api: APIServerProcess) -> None:
    """A watch whose client went away must end now, not at its timeout (30 min):
    each one left running holds a task and a store watch."""
    ctx = ssl.create_default_context(cafile=api.ca)
    token = api.token
    watch = PATHS[1]

    def abandon(n: int) -> bytes:
        raw = socket.create_connection(("127.0.0.1", api.port), timeout=30)
        with raw, ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(
                f"GET {watch} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
            )
            return tls.recv(16)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(abandon, range(200)))
    probe = LeakProbe(api.pid, name="shiftnet apiserver", rss_growth_kib=8 * 1024)
    with ThreadPoolExecutor(WORKERS) as pool:
        answers = list(pool.map(abandon, range(1500)))
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
    probe.assert_settled()
    print(probe.summary())
