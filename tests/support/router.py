"""Harness for router tests: a real HAProxy in a tmp work dir, always cleaned up by pid.

``haproxy_process`` yields an :class:`HAProxyProcess` whose master, workers and
old workers are killed by pid at teardown, whatever the test did (including
killing or restarting HAProxy itself). ``minimal_config`` writes small
hand-made configurations for the process/runtime tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from shiftnet.router.haproxy.process import HAProxyProcess, fit_limits

from tests.support.ports import free_port


def _pids_of_master(master: int) -> set[int]:
    """The master and every process whose parent is the master (its workers)."""
    found = {master}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(master):
            found.add(int(entry.name))
    return found


def haproxy_pids_using(work_dir: Path) -> set[int]:
    """Every haproxy process whose command line mentions this work dir (master + workers)."""
    needle = str(work_dir).encode()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"haproxy" in cmd and needle in cmd:
            found.add(int(entry.name))
    return found


def kill_haproxy(work_dir: Path) -> None:
    """Kill, by pid, every HAProxy started on ``work_dir`` (masters and their workers)."""
    pids: set[int] = set()
    for master in haproxy_pids_using(work_dir):
        pids |= _pids_of_master(master)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and haproxy_pids_using(work_dir):
        time.sleep(0.02)


@contextlib.contextmanager
def haproxy_cleanup(work_dir: Path) -> Iterator[None]:
    try:
        yield
    finally:
        kill_haproxy(work_dir)


@pytest.fixture
async def haproxy_process(tmp_path: Path) -> AsyncIterator[HAProxyProcess]:
    work = tmp_path / "router"
    proc = HAProxyProcess(work)
    with haproxy_cleanup(work):
        try:
            yield proc
        finally:
            with contextlib.suppress(Exception):
                await proc.stop(timeout=2)


def minimal_config(
    work_dir: Path,
    port: int,
    servers: list[tuple[str, str, int]] | None = None,
    text: str = "ok",
    maxconn: int | None = None,
    spare_slots: int = 0,
    extra_global: str = "",
) -> str:
    """A small HAProxy configuration: one frontend on ``port`` that answers ``text``
    on ``/static``, a map-driven ``Host`` lookup, and backend ``be_pods`` with the
    given (name, ip, port) servers plus disabled spare slots."""
    limits = fit_limits(maxconn or 50000)
    run = work_dir / "run"
    lines = [
        "global",
        f"  maxconn {limits.maxconn}",
        f"  nbthread {limits.nbthread}",
        "  hard-stop-after 10s",
        f"  stats socket {run}/admin.sock mode 600 level admin expose-fd listeners",
        extra_global,
        "defaults",
        "  mode http",
        "  timeout connect 2s",
        "  timeout client 30s",
        "  timeout server 30s",
        "  option http-server-close",
        "frontend public",
        f"  bind 127.0.0.1:{port}",
        f"  http-request return status 200 content-type text/plain string {text} if {{ path /static }}",
        "  use_backend %[req.hdr(host),lower,map(hosts.map,be_pods)]",
        "backend be_pods",
        "  balance roundrobin",
    ]
    for name, ip, p in servers or []:
        lines.append(f"  server {name} {ip}:{p} weight 1")
    for i in range(spare_slots):
        lines.append(f"  server _spare{i} 127.0.0.1:1 weight 1 disabled")
    lines.append("backend be_other")
    lines.append("  http-request return status 200 content-type text/plain string other")
    return "\n".join(lines) + "\n"


def write_minimal(work_dir: Path, **kw: object) -> Path:
    conf = work_dir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "haproxy.cfg").write_text(minimal_config(work_dir, **kw))  # type: ignore[arg-type]
    (conf / "hosts.map").write_text("")
    return conf / "haproxy.cfg"


def http_get(port: int, path: str = "/static", host: str = "x", ip: str = "127.0.0.1") -> tuple[int, str]:
    """One plain HTTP/1.0 request with a fresh connection: (status, body)."""
    with socket.create_connection((ip, port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    return status, body.decode(errors="replace")


async def aget(port: int, path: str = "/static", host: str = "x") -> tuple[int, str]:
    return await asyncio.to_thread(http_get, port, path, host)


def port() -> int:
    return free_port()
