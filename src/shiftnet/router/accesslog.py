"""The router's own access log: HAProxy's log messages received and written to a bounded file.

Why a receiver in the router: without a syslog address (``ROUTER_SYSLOG_ADDRESS``)
a user still needs to see each request and the route, backend and server
that answered it (``shiftnet logs router``). HAProxy sends one datagram per
request (``format raw``, the fields of ``router/haproxy/log_format.py``) to
a UNIX datagram socket in the router's run directory: nothing listens on
the network, and only the router's user can reach the socket (0600 in a
0700 directory). A socket path, unlike a port, also survives a router
restart: an adopted HAProxy keeps sending to the same place.

Each message becomes one line of ``<work_dir>/logs/access.log`` (0600),
prefixed with the time of receipt and the route named through the router's
structured description (:class:`RouteNames`). When the file would grow
past its bound it is renamed to ``access.log.1`` (replacing the older one),
so the log never holds more than two files of ``max_bytes`` each. Datagrams
that arrive in one loop turn are written with one ``write``. HAProxy's
other messages (servers up or down, proxies stopped by a reload) are left
out; with ``ROUTER_SYSLOG_FORMAT`` every message is written as it came.
Control characters never reach the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import os
import re
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from shiftnet.private_files import ensure_private_dir, write_private_file
from shiftnet.router.access_routes import NO_ROUTE, RouteNames
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.log_format import FIXED_FIELDS, OWN_LOG_LENGTH
from shiftnet.router.haproxy.names import SNI_BACKEND

log = logging.getLogger(__name__)

ACCESS_LOG = "access.log"
ROTATED_SUFFIX = ".1"
# run/: where this router's access log goes ("file", "syslog" or "off"), for ``diagnose``.
DESTINATION_RECORD = "access-log.json"
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
RECEIVE_BUFFER = 4 * 1024 * 1024  # bursts of requests queue here, not in HAProxy's drops


def log_path(work_dir: Path | str) -> Path:
    """Where the router whose work directory is ``work_dir`` writes its access log."""
    return Path(work_dir) / "logs" / ACCESS_LOG


def record_destination(work_dir: Path, config: RouterConfig) -> None:
    """Write ``run/access-log.json``: where HAProxy's log of this router goes, and in which
    format, so ``shiftnet diagnose`` can find a request's line without the router's settings."""
    if config.own_access_log:
        record = {"to": "file", "where": str(log_path(work_dir))}
    elif config.syslog_address is not None:
        record = {"to": "syslog", "where": config.syslog_address}
    else:
        record = {"to": "off", "where": "ROUTER_ACCESS_LOG_MAX_BYTES=0"}
    record["format"] = "own" if config.syslog_format is None else "ROUTER_SYSLOG_FORMAT"
    write_private_file(
        ensure_private_dir(Path(work_dir) / "run") / DESTINATION_RECORD,
        json.dumps(record, sort_keys=True),
    )


def _visible(text: str) -> str:
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def format_line(
    message: bytes, names: RouteNames, now: datetime.datetime, own_format: bool = True
) -> str | None:
    """One file line from one HAProxy message (None: a message the log leaves out).

    With the router's own format, HAProxy's other messages (a server going
    down, a proxy stopped by a reload: hundreds per reload) are left out;
    with ``ROUTER_SYSLOG_FORMAT`` every message is written as it came.
    """
    text = message.decode("utf-8", "backslashreplace").rstrip("\n")
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    fields = text.split(" ", FIXED_FIELDS)
    if len(fields) < FIXED_FIELDS or fields[0] not in ("H", "T"):
        return None if own_format else f"{stamp} {_visible(text)}\n"
    kind, backend, server, status, sent, timings, client, term, host, path = fields[:FIXED_FIELDS]
    if kind == "T" and backend == SNI_BACKEND:
        return None  # the TLS hop to fe_sni, which logs the request itself
    rest = fields[FIXED_FIELDS] if len(fields) > FIXED_FIELDS else ""
    route = names.route(backend, unquote(host).lower(), path) if backend else NO_ROUTE
    line = (
        f"{stamp} route={route} backend={backend} server={server} status={status}"
        f" bytes={sent} timings={timings} client={client} termination={term} host={host}"
    )
    rest = rest.strip()
    return _visible(f"{line} {rest}" if rest else line) + "\n"


class AccessLogFile:
    """The log file and its one rotated predecessor, each at most ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._fd: int | None = None
        self._size = 0

    def _open(self) -> int:
        if self._fd is None:
            ensure_private_dir(self.path.parent)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            st = os.fstat(self._fd)
            if stat.S_IMODE(st.st_mode) != 0o600:
                os.fchmod(self._fd, 0o600)
            self._size = st.st_size
        return self._fd

    def write(self, lines: list[str]) -> None:
        """Append ``lines``, rotating first whenever the next line would pass the bound."""
        chunk: list[bytes] = []
        chunk_size = 0
        self._open()
        for line in lines:
            data = line.encode()
            if self._size + chunk_size + len(data) > self.max_bytes and self._size + chunk_size:
                self._flush(chunk)
                chunk, chunk_size = [], 0
                self._rotate()
            chunk.append(data)
            chunk_size += len(data)
        self._flush(chunk)

    def _flush(self, chunk: list[bytes]) -> None:
        if chunk:
            data = b"".join(chunk)
            os.write(self._open(), data)
            self._size += len(data)

    def _rotate(self) -> None:
        self.close()
        os.replace(self.path, self.path.with_name(self.path.name + ROTATED_SUFFIX))
        self._open()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Receiver(asyncio.DatagramProtocol):
    def __init__(self, owner: AccessLog) -> None:
        self.owner = owner

    def datagram_received(self, data: bytes, addr: object) -> None:
        self.owner.received(data)

    def error_received(self, exc: Exception) -> None:
        log.warning("access log receive error=%s", exc)


class AccessLog:
    """The receiving socket and the file; ``names`` gives the current route index."""

    def __init__(
        self,
        socket_path: Path,
        file_path: Path,
        max_bytes: int,
        names: Callable[[], RouteNames],
        own_format: bool = True,
    ) -> None:
        self.socket_path = socket_path
        self.own_format = own_format
        self.file = AccessLogFile(file_path, max_bytes)
        self._names = names
        self._pending: list[bytes] = []
        self._scheduled = False
        self._transport: asyncio.DatagramTransport | None = None
        self.received_count = 0
        self.written_count = 0

    async def start(self) -> None:
        """Bind the socket (replacing a stale one from an earlier router)."""
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
            old = os.umask(0o177)
            try:
                sock.bind(str(self.socket_path))
            finally:
                os.umask(old)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _Receiver(self), sock=sock)
        self._transport = transport
        log.info("access log receiving socket=%s file=%s", self.socket_path, self.file.path)

    def received(self, data: bytes) -> None:
        self.received_count += 1
        self._pending.append(data[:OWN_LOG_LENGTH])
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Write every message received so far."""
        self._scheduled = False
        pending, self._pending = self._pending, []
        if not pending:
            return
        names = self._names()
        now = datetime.datetime.now(datetime.UTC)
        own = self.own_format
        lines = [line for m in pending if (line := format_line(m, names, now, own)) is not None]
        try:
            self.file.write(lines)
            self.written_count += len(lines)
        except OSError as err:
            log.warning("access log not written file=%s error=%s", self.file.path, err)

    async def stop(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None
            await asyncio.sleep(0)
        self.flush()
        self.file.close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
