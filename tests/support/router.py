"""Harness for router tests: a real HAProxy in a tmp work dir, always cleaned up by pid.

``haproxy_process`` yields an :class:`HAProxyProcess` whose master, workers and
old workers are killed by pid at teardown, whatever the test did (including
killing or restarting HAProxy itself). ``minimal_config`` writes small
hand-made configurations for the process/runtime tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import shutil
import signal
import socket
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from shiftnet.api import Endpoints, Namespace, Route, Service
from shiftnet.client import Client
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.process import HAProxyProcess, fit_limits, socket_dir
from shiftnet.router.haproxy.socket_dirs import owner_dir
from shiftnet.store import open_store
from tests.support.backends import Backend
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
    """Kill, by pid, every HAProxy started on ``work_dir`` (masters and their workers),
    and remove its socket and owner-record directories that live outside ``work_dir``."""
    pids: set[int] = set()
    for master in haproxy_pids_using(work_dir):
        pids |= _pids_of_master(master)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and haproxy_pids_using(work_dir):
        time.sleep(0.02)
    for directory in {socket_dir(work_dir), owner_dir(work_dir)}:
        if not directory.is_relative_to(Path(work_dir).resolve()):
            shutil.rmtree(directory, ignore_errors=True)


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
    hard_stop_after: str = "10s",
) -> str:
    """A small HAProxy configuration: one frontend on ``port`` that answers ``text``
    on ``/static``, a map-driven ``Host`` lookup, and backend ``be_pods`` with the
    given (name, ip, port) servers plus disabled spare slots."""
    limits = fit_limits(maxconn or 50000)
    run = socket_dir(work_dir)
    lines = [
        "global",
        f"  maxconn {limits.maxconn}",
        f"  nbthread {limits.nbthread}",
        f"  hard-stop-after {hard_stop_after}",
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
        "  http-request return status 200 content-type text/plain "
        f"string {text} if {{ path /static }}",
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


def http_get(
    port: int, path: str = "/static", host: str = "x", ip: str = "127.0.0.1"
) -> tuple[int, str]:
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


# --------------------------------------------------------------------------
# The whole router: store + Router + HAProxy on free ports, and a real client.


@dataclasses.dataclass
class Reply:
    status: int
    body: str
    headers: dict[str, str]
    cert_sha256: bytes | None = None

    @property
    def backend(self) -> str:
        return self.headers.get("x-backend", "")


def request(
    port: int,
    host: str,
    path: str = "/",
    *,
    tls: bool = False,
    sni: str | None = "",
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> Reply:
    """One HTTP/1.1 request on a fresh connection (TLS with SNI ``sni``, default ``host``)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    cert = None
    try:
        sock: socket.socket = raw
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            server_name = host if sni == "" else sni
            sock = ctx.wrap_socket(raw, server_hostname=server_name)
            der = sock.getpeercert(binary_form=True)
            cert = hashlib.sha256(der).digest() if der else None
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not chunk:
                break
            data += chunk
    finally:
        raw.close()
    head, _, body = data.partition(b"\r\n\r\n")
    head_lines = head.decode(errors="replace").split("\r\n")
    status = int(head_lines[0].split(" ", 2)[1]) if head_lines and head_lines[0] else 0
    hdrs = {}
    for line in head_lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return Reply(status, body.decode(errors="replace"), hdrs, cert)


def sha256_of_pem(pem: str | bytes) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    data = pem.encode() if isinstance(pem, str) else pem
    return x509.load_pem_x509_certificate(data).fingerprint(hashes.SHA256())


def namespace(name: str, labels: dict[str, str] | None = None) -> Namespace:
    return Namespace.model_validate({"metadata": {"name": name, "labels": labels or {}}})


def service(ns: str, name: str, target_port: int = 8080) -> Service:
    return Service.model_validate(
        {
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "selector": {"app": name},
                "ports": [{"name": "http", "port": 80, "targetPort": target_port}],
            },
        }
    )


def endpoints(ns: str, name: str, pods: list[Backend], not_ready: list[Backend] = ()) -> Endpoints:  # type: ignore[assignment]
    """One subset per pod port (pods on one port share a subset)."""
    by_port: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for b in pods:
        by_port.setdefault(b.port, {"a": [], "n": []})["a"].append(_addr(ns, b))
    for b in not_ready:
        by_port.setdefault(b.port, {"a": [], "n": []})["n"].append(_addr(ns, b))
    subsets = [
        {"addresses": v["a"], "notReadyAddresses": v["n"], "ports": [{"name": "http", "port": p}]}
        for p, v in sorted(by_port.items())
    ]
    return Endpoints.model_validate(
        {"metadata": {"name": name, "namespace": ns}, "subsets": subsets}
    )


def _addr(ns: str, b: Backend) -> dict[str, Any]:
    return {"ip": b.ip, "targetRef": {"kind": "Pod", "namespace": ns, "name": b.name}}


def route(ns: str, name: str, host: str, svc: str, **spec: Any) -> Route:
    body: dict[str, Any] = {"host": host, "to": {"kind": "Service", "name": svc}}
    annotations = spec.pop("annotations", {})
    body.update(spec)
    return Route.model_validate(
        {"metadata": {"name": name, "namespace": ns, "annotations": annotations}, "spec": body}
    )


class RouterEnv:
    """A running router on free loopback ports with its store and a client."""

    def __init__(self, tmp: Path, extra_env: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.http_port, self.https_port, self.stats_port = free_port(), free_port(), free_port()
        # A short state dir: HAProxy's internal UNIX socket path must fit in 107 bytes.
        self.state_dir = Path(tempfile.mkdtemp(prefix="snr-", dir="/tmp"))
        self.work_dir = self.state_dir / "router-router"
        self.store = open_store(f"sqlite:///{tmp}/state.db")
        self.client = Client(self.store)
        env = {
            "ROUTER_SERVICE_HTTP_PORT": str(self.http_port),
            "ROUTER_SERVICE_HTTPS_PORT": str(self.https_port),
            "STATS_PORT": str(self.stats_port),
            "ROUTER_BIND_ADDRESS": "127.0.0.1",
            "RELOAD_INTERVAL": "0",
            "ROUTER_WORK_DIR": str(self.work_dir),
            "ROUTER_BACKEND_CHECK_INTERVAL": "200ms",
            "SHIFTNET_HOME": str(self.state_dir),
            "HOME": str(tmp),
        }
        env.update(extra_env or {})
        self.env = env
        self.config = RouterConfig.from_env(env)
        self.router: Any = None

    async def start(self) -> RouterEnv:
        from shiftnet.router import Router

        self.router = Router(self.store, self.config)
        await self.router.start()
        return self

    async def stop(self) -> None:
        try:
            if self.router is not None:
                await self.router.stop()
            await self.store.close()
        finally:
            kill_haproxy(self.work_dir)
            shutil.rmtree(self.state_dir, ignore_errors=True)

    async def apply(self, *objs: Any) -> None:
        """Create or replace objects (spec only; a replaced route keeps its status)."""
        for obj in objs:
            current = await self.client.try_get(
                type(obj), obj.metadata.namespace, obj.metadata.name
            )
            if current is None:
                await self.client.create(obj)
            else:
                obj.metadata.resource_version = current.metadata.resource_version
                if isinstance(obj, Route):
                    obj.status = current.status
                await self.client.update(obj)

    async def delete(self, cls: type, ns: str | None, name: str) -> None:
        await self.client.delete(cls, ns, name)

    async def get(self, host: str, path: str = "/", **kw: Any) -> Reply:
        return await asyncio.to_thread(request, self.http_port, host, path, **kw)

    async def get_tls(self, host: str, path: str = "/", **kw: Any) -> Reply:
        return await asyncio.to_thread(request, self.https_port, host, path, tls=True, **kw)

    async def eventually(self, probe: Any, timeout: float = 10.0) -> Any:
        """Await ``probe()`` until it returns a truthy value; return it (or fail with the last)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = await probe()
            except (OSError, ssl.SSLError) as err:
                last = err
            if last and not isinstance(last, Exception):
                return last
            await asyncio.sleep(0.05)
        raise AssertionError(f"condition not reached in {timeout}s; last={last!r}")

    async def ingress(self, ns: str, name: str) -> Any:
        r = await self.client.get(Route, ns, name)
        return next((e for e in r.status.ingress if e.router_name == self.config.name), None)


@pytest.fixture
async def router_env(tmp_path: Path) -> AsyncIterator[RouterEnv]:
    env = RouterEnv(tmp_path)
    try:
        await env.start()
        yield env
    finally:
        await env.stop()
