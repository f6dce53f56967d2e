"""Readiness probes as the kubelet runs them: tcpSocket, httpGet and exec.

A probe is one attempt with a timeout; ``ProbeTracker`` applies the
success/failure thresholds. Probes target the pod IP unless ``host`` is set;
a named port is looked up among the container's ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from shiftnet.api import Container, Probe
from shiftnet.api.names import is_digits

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str = ""


def resolve_port(port: int | str, container: Container) -> int | None:
    """A probe's port: a number, a numeric string, or the name of a container port."""
    if isinstance(port, int):
        return port
    if is_digits(port):
        return int(port)
    for p in container.ports:
        if p.name == port:
            return p.container_port
    return None


async def _tcp(host: str, port: int, timeout: float) -> ProbeResult:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError) as err:
        return ProbeResult(False, f"dial tcp {host}:{port}: {err or 'timeout'}")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ProbeResult(True)


def _insecure_tls() -> ssl.SSLContext:
    # The kubelet does not verify a pod's certificate either.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def http_request(path: str, host: str, port: int) -> bytes:
    """The probe's request; the one place a user's path and host enter HTTP text.

    Characters that could end the request line or a header are percent-encoded
    in the path; a host with whitespace or control characters is refused.
    """
    if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) == 0x7F for ch in host):
        raise ValueError(f"invalid probe host {host!r}")
    target = quote(path if path.startswith("/") else "/" + path, safe="/?&=%:@!$'()*+,;~-._")
    return (
        f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: shiftnet-probe/1\r\n"
        "Accept: */*\r\nConnection: close\r\n\r\n"
    ).encode("ascii")


async def _http(scheme: str, host: str, port: int, path: str, timeout: float) -> ProbeResult:
    """One GET, status 200-399 is success (redirects are not followed, as the kubelet)."""
    url = f"{scheme}://{host}:{port}{path}"
    tls = _insecure_tls() if scheme == "https" else None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, ssl=tls)
            try:
                writer.write(http_request(path, host, port))
                await writer.drain()
                line = await reader.readline()
            finally:
                writer.close()
                with contextlib.suppress(OSError, ssl.SSLError):
                    await writer.wait_closed()
    except (OSError, TimeoutError, ssl.SSLError, ValueError) as err:
        return ProbeResult(False, f"Get {url}: {err or 'timeout'}")
    parts = line.decode("latin-1").split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not is_digits(parts[1]):
        return ProbeResult(False, f"Get {url}: malformed HTTP response")
    code = int(parts[1])
    if 200 <= code < 400:
        return ProbeResult(True)
    return ProbeResult(False, f"HTTP probe failed with statuscode: {code}")


async def _exec(
    command: list[str], env: Mapping[str, str], cwd: str | None, timeout: float
) -> ProbeResult:
    if not command:
        return ProbeResult(False, "exec probe has no command")
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            env=dict(env),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as err:
        return ProbeResult(False, f"exec {command[0]}: {err.strerror or err}")
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return ProbeResult(False, f"command timed out after {timeout:g}s")
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    if proc.returncode == 0:
        return ProbeResult(True)
    tail = out.decode(errors="replace").strip()[-200:]
    return ProbeResult(False, f"exit code {proc.returncode}" + (f": {tail}" if tail else ""))


async def run_probe(
    probe: Probe,
    container: Container,
    pod_ip: str,
    env: Mapping[str, str],
    cwd: str | None,
    wrap: Callable[[list[str]], list[str]] | None = None,
) -> ProbeResult:
    """Run one probe attempt; never raises for a failing target.

    ``wrap`` turns an exec probe's command into one that runs inside the pod's
    network (tcp and http probes dial the pod IP from the node, as the kubelet)."""
    timeout = float(max(probe.timeout_seconds, 1))
    if probe.tcp_socket is not None:
        port = resolve_port(probe.tcp_socket.port, container)
        if port is None:
            return ProbeResult(
                False, f'tcpSocket port "{probe.tcp_socket.port}" is not a container port'
            )
        return await _tcp(probe.tcp_socket.host or pod_ip, port, timeout)
    if probe.http_get is not None:
        hg = probe.http_get
        port = resolve_port(hg.port, container)
        if port is None:
            return ProbeResult(False, f'httpGet port "{hg.port}" is not a container port')
        path = hg.path if hg.path.startswith("/") else "/" + hg.path
        return await _http(hg.scheme.lower(), hg.host or pod_ip, port, path, timeout)
    if probe.exec_ is not None:
        command = probe.exec_.command
        if wrap is not None and command:
            command = wrap(command)
        return await _exec(command, env, cwd, timeout)
    return ProbeResult(False, "probe has no handler (tcpSocket, httpGet or exec)")


class ProbeTracker:
    """Consecutive-result thresholds: ready after successThreshold successes in a
    row, not ready after failureThreshold failures in a row (kubelet semantics;
    a new container starts not ready, an adopted one keeps its last known
    readiness until the probes say otherwise)."""

    def __init__(self, probe: Probe, ready: bool = False) -> None:
        self.success_threshold = max(probe.success_threshold, 1)
        self.failure_threshold = max(probe.failure_threshold, 1)
        self.ready = ready
        self._successes = 0
        self._failures = 0
        self.last_message = ""

    def record(self, result: ProbeResult) -> bool:
        """Feed one result; returns True when readiness changed."""
        before = self.ready
        if result.ok:
            self._successes += 1
            self._failures = 0
            if self._successes >= self.success_threshold:
                self.ready = True
        else:
            self._failures += 1
            self._successes = 0
            self.last_message = result.message
            if self._failures >= self.failure_threshold:
                self.ready = False
        return before != self.ready
