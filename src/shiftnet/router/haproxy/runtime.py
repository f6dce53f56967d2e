"""Async client for HAProxy's runtime API (the admin-level stats socket).

Why: endpoint changes (pods coming, going, changing readiness or weight) and
map entries can be applied to the running workers in milliseconds without a
reload. The CLI has no status codes, so each command's answer is matched
against HAProxy's known refusals and a refusal raises :class:`RuntimeAPIError`
naming the command; the driver then falls back to a reload. The commands'
text, with their arguments checked, comes from ``commands.py``.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from shiftnet.router.haproxy import commands
from shiftnet.router.haproxy.commands import SSL_SUCCESS, RuntimeAPIError, server_change_commands
from shiftnet.router.haproxy.commands import is_ssl as commands_is_ssl
from shiftnet.router.haproxy.process import unix_command

__all__ = ["RuntimeAPI", "RuntimeAPIError", "server_change_commands"]

# Answers that mean "not done" (HAProxy 2.6 wording, matched case-insensitively).
_REFUSALS = (
    "no such",
    "unknown",
    "invalid",
    "require",
    "permission denied",
    "can't",
    "cannot",
    "failed",
    "not found",
    "out of memory",
    "is not",
    "must be",
    "not allowed",
    "expects",
)


@dataclass(frozen=True)
class StatRow:
    """One line of ``show stat``: a frontend, backend or server."""

    proxy: str
    name: str  # FRONTEND, BACKEND or the server name
    status: str
    weight: int
    sessions_total: int
    requests_total: int  # HTTP requests for HTTP proxies, sessions for TCP ones
    errors: int  # HTTP: 5xx answers; TCP: connection + response errors
    hrsp_5xx: int
    check_status: str
    address: str

    @property
    def is_backend(self) -> bool:
        return self.name == "BACKEND"

    @property
    def is_server(self) -> bool:
        return self.name not in ("FRONTEND", "BACKEND")


def _int(v: str | None) -> int:
    try:
        return int(v) if v else 0
    except ValueError:
        return 0


def parse_show_stat(text: str) -> list[StatRow]:
    """Parse the CSV ``show stat`` answer (header line starts with ``# ``)."""
    body = text.lstrip()
    if body.startswith("# "):
        body = body[2:]
    rows: list[StatRow] = []
    for rec in csv.DictReader(io.StringIO(body)):
        if not rec.get("pxname"):
            continue
        req_tot = _int(rec.get("req_tot"))
        stot = _int(rec.get("stot"))
        h5 = _int(rec.get("hrsp_5xx"))
        http = rec.get("mode", "http") == "http"
        # HTTP: answers in 5xx (a 503 for "no server" also counts as econ, so do
        # not add both); TCP: failed connections and broken responses.
        errors = h5 if http else _int(rec.get("econ")) + _int(rec.get("eresp"))
        rows.append(
            StatRow(
                proxy=rec["pxname"],
                name=rec.get("svname", ""),
                status=rec.get("status", ""),
                weight=_int(rec.get("weight")),
                sessions_total=stot,
                requests_total=req_tot if http and req_tot else stot,
                errors=errors,
                hrsp_5xx=h5,
                check_status=rec.get("check_status", ""),
                address=rec.get("addr", ""),
            )
        )
    return rows


@dataclass(frozen=True)
class ServerState:
    """One server from ``show servers state``."""

    backend: str
    server: str
    address: str
    port: int
    operational: int  # srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping
    admin: int  # srv_admin_state bit field: 0x01 forced maintenance, ...
    weight: int

    @property
    def in_maintenance(self) -> bool:
        # Forced, inherited or resolution maintenance (HAProxy's SRV_ADMF_MAINT). Not 0x04:
        # a slot written ``disabled`` keeps that bit after ``enable server`` while it serves.
        return bool(self.admin & 0x23)

    @property
    def up(self) -> bool:
        return self.operational == 2 and not self.in_maintenance


def parse_servers_state(text: str) -> list[ServerState]:
    """Parse ``show servers state`` (format version 1)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header: list[str] = []
    out: list[ServerState] = []
    for line in lines:
        if line.startswith("#"):
            header = line[1:].split()
            continue
        if not header or line.strip() == "1":
            continue
        fields = line.split()
        rec = dict(zip(header, fields, strict=False))
        if "be_name" not in rec:
            continue
        out.append(
            ServerState(
                backend=rec["be_name"],
                server=rec.get("srv_name", ""),
                address=rec.get("srv_addr", ""),
                port=_int(rec.get("srv_port")),
                operational=_int(rec.get("srv_op_state")),
                admin=_int(rec.get("srv_admin_state")),
                weight=_int(rec.get("srv_uweight")),
            )
        )
    return out


def _check_answer(command: str, answer: str) -> str:
    low = answer.strip().lower()
    if (
        any(r in low for r in _REFUSALS)
        and not low.startswith("ip changed")
        and "no need to change" not in low
    ):
        raise RuntimeAPIError(f"HAProxy refused {command!r}: {answer.strip()[:300]}")
    return answer


class RuntimeAPI:
    """Commands on HAProxy's admin socket; each call opens one short connection."""

    def __init__(self, socket_path: Path, timeout: float = 5.0) -> None:
        self.socket_path = Path(socket_path)
        self.timeout = timeout

    async def raw(self, command: str) -> str:
        if "\n" in command or "\r" in command:
            raise RuntimeAPIError("a runtime API command is one line")
        try:
            return await unix_command(self.socket_path, command, self.timeout)
        except (TimeoutError, OSError) as err:
            raise RuntimeAPIError(
                f"HAProxy runtime socket {self.socket_path} unreachable: {err}"
            ) from err

    async def query(self, command: str) -> str:
        """Run a ``show`` command: data lines are not refusals, only a first-line error is."""
        answer = await self.raw(command)
        first = answer.lstrip().split("\n", 1)[0]
        if first and not first.startswith(("#", "0x")) and not first[0].isdigit():
            _check_answer(command, first)
        return answer

    async def command(self, command: str) -> str:
        """Run one command and raise :class:`RuntimeAPIError` when HAProxy refuses it."""
        return _check_answer(command, await self.raw(command))

    async def batch(self, commands: list[str]) -> None:
        """Run several commands in order, many per connection (``;``-separated).

        Arguments are validated to hold no ``;``, so the split is exact; a
        refusal anywhere in a chunk raises with HAProxy's answer. A certificate
        command (``ssl``) is sent alone, in its turn: a payload ends its connection.
        """
        plain: list[str] = []
        for command in [*commands, None]:
            if command is not None and not commands_is_ssl(command):
                plain.append(command)
                continue
            for i in range(0, len(plain), 100):
                line = "; ".join(plain[i : i + 100])
                _check_answer(line, await self.raw(line))
            plain = []
            if command is not None:  # a certificate command travels alone, on its own connection
                await self.ssl(command)

    async def ssl(self, command: str) -> str:
        """Run one certificate command (a payload, if any, built by ``commands``: no empty
        line inside); anything but HAProxy's success answer raises."""
        head = command.split("\n", 1)[0]
        try:
            answer = await unix_command(self.socket_path, command, self.timeout)
        except (TimeoutError, OSError) as err:
            raise RuntimeAPIError(
                f"HAProxy runtime socket {self.socket_path} unreachable: {err}"
            ) from err
        if not any(word in answer for word in SSL_SUCCESS):
            raise RuntimeAPIError(
                f"HAProxy refused {head!r}: {answer.strip()[:300] or 'no answer'}"
            )
        return answer

    # ------------------------------------------------------------- servers
    set_server_addr_cmd = staticmethod(commands.set_server_addr)
    set_server_state_cmd = staticmethod(commands.set_server_state)
    set_server_weight_cmd = staticmethod(commands.set_server_weight)

    async def set_server_addr(self, backend: str, server: str, address: str, port: int) -> None:
        await self.command(self.set_server_addr_cmd(backend, server, address, port))

    async def set_server_state(self, backend: str, server: str, state: str) -> None:
        await self.command(self.set_server_state_cmd(backend, server, state))

    async def set_server_weight(self, backend: str, server: str, weight: int) -> None:
        await self.command(self.set_server_weight_cmd(backend, server, weight))

    async def enable_server(self, backend: str, server: str) -> None:
        await self.command(commands.server_cmd("enable server", backend, server))

    async def disable_server(self, backend: str, server: str) -> None:
        await self.command(commands.server_cmd("disable server", backend, server))

    async def enable_health(self, backend: str, server: str) -> None:
        await self.command(commands.server_cmd("enable health", backend, server))

    # ---------------------------------------------------------------- maps
    add_map_cmd = staticmethod(commands.add_map)
    set_map_cmd = staticmethod(commands.set_map)
    del_map_cmd = staticmethod(commands.del_map)

    async def add_map(self, map_ref: str, key: str, value: str) -> None:
        await self.command(self.add_map_cmd(map_ref, key, value))

    async def set_map(self, map_ref: str, key: str, value: str) -> None:
        await self.command(self.set_map_cmd(map_ref, key, value))

    async def del_map(self, map_ref: str, key: str) -> None:
        await self.command(self.del_map_cmd(map_ref, key))

    async def show_map(self, map_ref: str) -> dict[str, str]:
        """Entries of one map: key -> value."""
        answer = await self.query(f"show map {commands.map_ref(map_ref)}")
        entries: dict[str, str] = {}
        for line in answer.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0].startswith("0x"):
                entries[parts[1]] = parts[2]
        return entries

    async def show_maps(self) -> list[str]:
        """The map references the running worker knows (file paths)."""
        answer = await self.query("show map")
        refs: list[str] = []
        for line in answer.splitlines():
            m = re.match(r"^\d+\s+\((.*)\)", line.strip())
            if m:
                refs.append(m[1])
        return refs

    async def show_info(self) -> dict[str, str]:
        """``show info``: field -> value (``description``: the running configuration's identity)."""
        answer = await self.query("show info")
        fields: dict[str, str] = {}
        for line in answer.splitlines():
            key, sep, value = line.partition(": ")
            if sep:
                fields[key] = value
        return fields

    # --------------------------------------------------------------- stats
    async def show_stat(self) -> list[StatRow]:
        return parse_show_stat(await self.query("show stat"))

    async def show_servers_state(self) -> list[ServerState]:
        return parse_servers_state(await self.query("show servers state"))

    async def backend_counts(self) -> dict[str, tuple[int, int]]:
        """Per backend: (requests, errors), from ``show stat``."""
        return {
            r.proxy: (r.requests_total, r.errors) for r in await self.show_stat() if r.is_backend
        }
