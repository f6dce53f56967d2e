"""The text of HAProxy runtime API commands, checked: ``set server``, ``add/set/del map``,
and the certificate commands (``new/set/commit/del ssl cert``, ``add/del ssl crt-list``).

Why apart from the client (``runtime.py``): the planner (``live.py``) is pure
and builds these commands from two descriptions; only the client talks to
the socket. Arguments are validated here (backend/server names, addresses,
map keys) so nothing can smuggle a second command through ``;`` or a newline.
A command with a payload (``set ssl cert``, ``add ssl crt-list``) is the one
kind that holds newlines: its first line ends with ``<<`` and the payload runs
until an empty line, so a payload is refused when it could hold one.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Protocol

from shiftnet.errors import ShiftnetError


class RuntimeAPIError(ShiftnetError):
    """HAProxy's runtime API refused or could not run a command."""


_NAME_RE = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
_MAP_ARG_RE = re.compile(r"^[\x21-\x7e]{1,4096}$")
_MAP_PATH_RE = re.compile(r"^[A-Za-z0-9_./#\-]{1,4096}$")
_CERT_FILE_RE = re.compile(r"^[A-Za-z0-9_,\-]+(?:[./][A-Za-z0-9_,\-]+)*$")
_PAYLOAD_LINE_RE = re.compile(r"^[\x20-\x7e]+$")
PAYLOAD_MARK = " <<\n"
# HAProxy's CLI reads a command and its payload into one buffer (tune.bufsize, 16 KiB by
# default); a larger one is dropped without an answer, so it goes by reload instead.
MAX_PAYLOAD = 15_000
# What HAProxy answers when an ``ssl`` command did its work; anything else is a refusal.
SSL_SUCCESS = (
    "Success!",
    "Transaction created",
    "Transaction updated",
    "New empty certificate store",
    "deleted",
)


def _name(value: str, what: str) -> str:
    if not _NAME_RE.match(value):
        raise RuntimeAPIError(f"{what} {value!r} is not a valid HAProxy object name")
    return value


def _map_arg(value: str, what: str) -> str:
    if not _MAP_ARG_RE.match(value) or ";" in value or "\\" in value:
        raise RuntimeAPIError(f"map {what} {value!r} cannot be sent through the runtime API")
    return value


def _map_path(value: str) -> str:
    if not _MAP_PATH_RE.match(value):
        raise RuntimeAPIError(f"map reference {value!r} is not a plain path")
    return value


def _address(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError as err:
        raise RuntimeAPIError(f"server address {value!r} is not an IP address") from err


class ServerRuntimePart(Protocol):
    """What ``set server`` can change on one server line."""

    @property
    def address(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def weight(self) -> int: ...
    @property
    def disabled(self) -> bool: ...


def server_change_commands(
    backend: str, server: str, before: ServerRuntimePart, after: ServerRuntimePart
) -> list[str]:
    """The runtime commands that turn one server from ``before`` into ``after``: drain
    first, then address and weight, then bring it back (never traffic to a half-set slot)."""
    cmds: list[str] = []
    if after.disabled and not before.disabled:
        cmds.append(set_server_state(backend, server, "maint"))
    if (after.address, after.port) != (before.address, before.port):
        cmds.append(set_server_addr(backend, server, after.address, after.port))
    if after.weight != before.weight:
        cmds.append(set_server_weight(backend, server, after.weight))
    if before.disabled and not after.disabled:
        cmds.append(set_server_state(backend, server, "ready"))
    return cmds


def set_server_addr(backend: str, server: str, address: str, port: int) -> str:
    if not 0 < port < 65536:
        raise RuntimeAPIError(f"server port {port} is out of range")
    return (
        f"set server {_name(backend, 'backend')}/{_name(server, 'server')} "
        f"addr {_address(address)} port {port}"
    )


def set_server_state(backend: str, server: str, state: str) -> str:
    if state not in ("ready", "drain", "maint"):
        raise RuntimeAPIError(f"server state {state!r} is not ready, drain or maint")
    return f"set server {_name(backend, 'backend')}/{_name(server, 'server')} state {state}"


def set_server_weight(backend: str, server: str, weight: int) -> str:
    if not 0 <= weight <= 256:
        raise RuntimeAPIError(f"server weight {weight} is not within 0..256")
    return f"set server {_name(backend, 'backend')}/{_name(server, 'server')} weight {weight}"


def server_cmd(verb: str, backend: str, server: str) -> str:
    """``enable server``, ``disable server``, ``enable health`` and the like."""
    return f"{verb} {_name(backend, 'backend')}/{_name(server, 'server')}"


def add_map(map_ref: str, key: str, value: str) -> str:
    return f"add map {_map_path(map_ref)} {_map_arg(key, 'key')} {_map_arg(value, 'value')}"


def set_map(map_ref: str, key: str, value: str) -> str:
    return f"set map {_map_path(map_ref)} {_map_arg(key, 'key')} {_map_arg(value, 'value')}"


def del_map(map_ref: str, key: str) -> str:
    return f"del map {_map_path(map_ref)} {_map_arg(key, 'key')}"


def map_ref(value: str) -> str:
    """A map reference (file path) checked for the command line."""
    return _map_path(value)


def _cert_file(value: str) -> str:
    if len(value) > 4096 or not _CERT_FILE_RE.match(value):
        raise RuntimeAPIError(f"certificate file name {value!r} is not a plain relative path")
    return value


def _payload(text: str, what: str) -> str:
    """Payload lines: visible ASCII and spaces, none empty (an empty line ends the payload)."""
    lines = text.rstrip("\n").split("\n")
    if not all(_PAYLOAD_LINE_RE.match(line) for line in lines):
        raise RuntimeAPIError(f"{what} cannot be sent as a runtime API payload")
    if len(text) > MAX_PAYLOAD:
        raise RuntimeAPIError(f"{what} is longer than a runtime API payload may be")
    return "\n".join(lines) + "\n"


def is_ssl(command: str) -> bool:
    """A certificate command: sent on its own connection (a payload ends it) and judged by
    HAProxy's success answer (a dropped command answers nothing at all)."""
    return command.startswith(("new ssl ", "set ssl ", "commit ssl ", "del ssl ", "add ssl "))


def new_ssl_cert(file: str) -> str:
    return f"new ssl cert {_cert_file(file)}"


def set_ssl_cert(file: str, pem: bytes) -> str:
    """Open (or update) the transaction of ``file`` with new PEM content."""
    body = _payload(pem.decode("ascii", errors="replace"), f"certificate {file}")
    return f"set ssl cert {_cert_file(file)}{PAYLOAD_MARK}{body}"


def commit_ssl_cert(file: str) -> str:
    return f"commit ssl cert {_cert_file(file)}"


def del_ssl_cert(file: str) -> str:
    return f"del ssl cert {_cert_file(file)}"


def add_ssl_crt_list(crt_list: str, line: str) -> str:
    """Insert one crt-list line (certificate file and SNI filter) into a loaded crt-list."""
    file, _, sni = line.strip().partition(" ")
    body = _payload(f"{_cert_file(file)} {sni}", f"crt-list line {line!r}")
    return f"add ssl crt-list {_cert_file(crt_list)}{PAYLOAD_MARK}{body}"


def del_ssl_crt_list(crt_list: str, file: str) -> str:
    return f"del ssl crt-list {_cert_file(crt_list)} {_cert_file(file)}"
