"""A router started with defaults exposes nothing beyond loopback, and its stats page
asks for a password it generated, kept private and reuses on the next start."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import stat
import subprocess
from pathlib import Path

import pytest
from tests.support.router import RouterEnv, haproxy_pids_using, request

from shiftnet.router.config import RouterConfig
from shiftnet.router.stats_auth import CREDENTIALS_FILE

pytestmark = pytest.mark.integration

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in (Path("/proc") / str(pid) / "fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _address(hex_addr: str) -> str:
    """``0100007F:1F90`` (or its IPv6 form) -> ``127.0.0.1:8080``."""
    ip_hex, port_hex = hex_addr.split(":")
    raw = bytes.fromhex(ip_hex)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    return f"[{ip}]:{int(port_hex, 16)}" if ip.version == 6 else f"{ip}:{int(port_hex, 16)}"


def listening_addresses(work_dir: Path) -> set[str]:
    """Every TCP address the router's HAProxy processes listen on (from /proc, no probing)."""
    found: set[str] = set()
    for pid in haproxy_pids_using(work_dir):
        inodes = _socket_inodes(pid)
        for table in ("tcp", "tcp6"):
            lines = (Path("/proc") / str(pid) / "net" / table).read_text().splitlines()[1:]
            for line in lines:
                cols = line.split()
                if cols[3] == LISTEN and cols[9] in inodes:
                    found.add(_address(cols[1]))
    return found


def default_env(tmp_path: Path, **extra: str) -> RouterEnv:
    """The test harness's router, but with the router's own bind and stats defaults."""
    env = RouterEnv(tmp_path)
    env.env.pop("ROUTER_BIND_ADDRESS")
    env.env.update(extra)
    env.config = RouterConfig.from_env(env.env)
    return env


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_default_router_listens_on_loopback_only(tmp_path: Path) -> None:
    env = default_env(tmp_path)
    try:
        await env.start()
        ports = {env.http_port, env.https_port, env.stats_port}
        assert listening_addresses(env.work_dir) == {f"127.0.0.1:{p}" for p in ports}
    finally:
        await env.stop()


async def test_exposing_the_router_is_explicit(tmp_path: Path) -> None:
    env = default_env(tmp_path, ROUTER_BIND_ADDRESS="0.0.0.0", STATS_PORT="0")
    try:
        await env.start()
        assert listening_addresses(env.work_dir) == {
            f"0.0.0.0:{env.http_port}",
            f"0.0.0.0:{env.https_port}",
        }
    finally:
        await env.stop()


def _basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def _stats(env: RouterEnv, headers: dict[str, str] | None = None) -> tuple[int, str]:
    reply = await asyncio.to_thread(request, env.stats_port, "stats", "/", headers=headers)
    return reply.status, reply.body


async def test_stats_page_needs_the_generated_password_kept_and_reused(tmp_path: Path) -> None:
    env = default_env(tmp_path)
    try:
        await env.start()
        creds = env.router.stats_credentials
        assert creds.generated and creds.username == "admin" and len(creds.password) >= 20
        path = env.work_dir / CREDENTIALS_FILE
        assert creds.path == path
        assert path.read_text() == f"admin:{creds.password}\n"
        assert _mode(path) == 0o600

        assert (await _stats(env))[0] == 401
        assert (await _stats(env, _basic("admin", "wrong")))[0] == 401
        status, body = await _stats(env, _basic("admin", creds.password))
        assert status == 200 and "Statistics Report" in body
        version = subprocess.run(
            ["haproxy", "-v"], capture_output=True, text=True, check=True
        ).stdout.split()[2]  # "HAProxy version 2.6.12-1 ..."
        assert version not in body

        # A restart on the same work directory reuses the same credentials.
        await env.router.stop()
        env.router = None
        await env.start()
        again = env.router.stats_credentials
        assert not again.generated
        assert (again.username, again.password, again.path) == ("admin", creds.password, path)
        assert _mode(path) == 0o600
        assert (await _stats(env))[0] == 401
        assert (await _stats(env, _basic("admin", creds.password)))[0] == 200
    finally:
        await env.stop()


async def test_given_stats_credentials_are_used_and_nothing_is_written(tmp_path: Path) -> None:
    env = default_env(tmp_path, STATS_USERNAME="ops", STATS_PASSWORD="s3cret-pass")
    try:
        await env.start()
        assert not (env.work_dir / CREDENTIALS_FILE).exists()
        assert (await _stats(env, _basic("admin", "s3cret-pass")))[0] == 401
        assert (await _stats(env, _basic("ops", "s3cret-pass")))[0] == 200
    finally:
        await env.stop()
