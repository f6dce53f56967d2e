"""Access logs through a real router and HAProxy: lines name the route, backend and server.

With no ``ROUTER_SYSLOG_ADDRESS`` the router receives HAProxy's log on a UNIX
datagram socket and writes ``<work_dir>/logs/access.log``. Requests go
through real HAProxy to loopback pods; the file is read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import stat
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.backends import backends
from tests.support.cli import SHIFTNET, Shiftnet, one_error_line
from tests.support.leaks import LeakProbe
from tests.support.ports import free_port
from tests.support.router import RouterEnv, endpoints, namespace, route, service
from tests.support.tls import TestCA

from shiftnet.router.accesslog import log_path
from shiftnet.router.haproxy.names import LOG_SOCKET
from shiftnet.router.haproxy.process import socket_dir

pytestmark = pytest.mark.integration

NO_COOKIES = {"haproxy.router.openshift.io/disable_cookies": "true"}
CAPTURES = {
    "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS": "X-Client:16,User-Agent:40",
    "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS": "X-Backend:20",
    "ROUTER_CAPTURE_HTTP_COOKIE": "session=:16",
    "ROUTER_UNIQUE_ID_HEADER_NAME": "X-Request-Id",
}


async def log_settled(env: RouterEnv, quiet: float = 1.0) -> None:
    """Until the access log has not grown for ``quiet`` seconds: HAProxy logs a request
    when it ends, from whichever process served it, so the lines of requests made while
    a route became ready (some through a worker a reload is replacing) can come late."""
    path = log_path(env.work_dir)
    last, since = -1, time.monotonic()

    async def probe() -> bool:
        nonlocal last, since
        size = path.stat().st_size if path.exists() else 0
        if size != last:
            last, since = size, time.monotonic()
        return time.monotonic() - since >= quiet

    await env.eventually(probe, timeout=30)


async def lines_with(env: RouterEnv, needle: str, count: int = 1) -> list[str]:
    """The access log's lines holding ``needle``, once there are ``count`` of them."""
    path = log_path(env.work_dir)

    async def probe() -> list[str] | None:
        if not path.exists():
            return None
        found = [line for line in path.read_text().splitlines() if needle in line]
        return found if len(found) >= count else None

    result: list[str] = await env.eventually(probe)
    return result


async def ready(env: RouterEnv, host: str, tls: bool = False) -> None:
    async def probe() -> bool:
        reply = await (env.get_tls(host) if tls else env.get(host))
        return reply.status == 200

    await env.eventually(probe)


async def test_lines_name_route_backend_server_and_carry_captures(tmp_path: Path) -> None:
    env = RouterEnv(tmp_path, CAPTURES)
    try:
        await env.start()
        with backends("pod-a", "pod-b") as pods, backends("edge-pod") as edge_pods:
            await env.apply(
                namespace("logs"),
                service("logs", "web"),
                endpoints("logs", "web", pods),
                service("logs", "secure"),
                endpoints("logs", "secure", edge_pods),
                # Two routes with equal backends share one; the host tells them apart.
                route("logs", "web", "web.example.com", "web", annotations=NO_COOKIES),
                route("logs", "twin", "twin.example.com", "web", annotations=NO_COOKIES),
                route(
                    "logs", "secure", "secure.example.com", "secure", tls={"termination": "edge"}
                ),
            )
            await ready(env, "web.example.com")
            await ready(env, "twin.example.com")
            await ready(env, "secure.example.com", tls=True)
            reply = await env.get(
                "web.example.com",
                "/shop?q=1",
                headers={"X-Client": "tester-1", "Cookie": "session=abc123; other=1"},
            )
            assert reply.status == 200
            seen = {k.lower(): v for k, v in json.loads(reply.headers["x-seen-headers"]).items()}
            request_id = seen["x-request-id"]
            (web,) = await lines_with(env, "/shop?q=1")
            assert " route=logs:web " in web
            assert re.search(r" backend=be_http:logs:\S+ server=s\d+ status=200 bytes=\d+ ", web)
            assert re.search(r" timings=\d+/\d+/\d+/\d+/\d+ ", web)
            assert "host=web.example.com" in web
            assert request_id in web  # the ID the pod received is the one logged
            assert "{tester-1|" in web  # request captures: X-Client, then User-Agent
            assert "{" + reply.backend + "}" in web  # response capture: the pod's X-Backend
            assert " session=abc123 " in web  # the cookie (exact name), name and value within 16
            served = env.router.route_names()
            twin_reply = await env.get("twin.example.com", "/twin-path")
            assert twin_reply.status == 200
            (twin,) = await lines_with(env, "/twin-path")
            assert " route=logs:twin " in twin
            assert served is not None
            backend_of = env.router._assembly.backends
            assert backend_of[("logs", "web")] == backend_of[("logs", "twin")]  # really shared
            tls_reply = await env.get_tls("secure.example.com", "/over-tls")
            assert tls_reply.status == 200
            (edge,) = await lines_with(env, "/over-tls")
            assert " route=logs:secure backend=be_edge_http:logs:secure " in edge
            unknown = await env.get("nowhere.example.com", "/lost")
            assert unknown.status == 503
            (lost,) = await lines_with(env, "/lost")
            assert " route=- backend=openshift_default server=<NOSRV> status=503 " in lost
            assert not any(" backend=be_sni " in line for line in
                           log_path(env.work_dir).read_text().splitlines())  # fmt: skip
        mode = stat.S_IMODE(log_path(env.work_dir).stat().st_mode)
        assert mode == 0o600
        assert stat.S_IMODE(log_path(env.work_dir).parent.stat().st_mode) == 0o700
    finally:
        await env.stop()


async def test_access_log_rotates_at_its_bound(tmp_path: Path) -> None:
    bound = 2000
    env = RouterEnv(tmp_path, {"ROUTER_ACCESS_LOG_MAX_BYTES": str(bound)})
    try:
        await env.start()
        with backends("pod") as pods:
            await env.apply(
                namespace("rot"),
                service("rot", "web"),
                endpoints("rot", "web", pods),
                route("rot", "web", "rot.example.com", "web", annotations=NO_COOKIES),
            )
            await ready(env, "rot.example.com")
            for i in range(40):
                assert (await env.get("rot.example.com", f"/n{i}")).status == 200
            await lines_with(env, "/n39")
        current = log_path(env.work_dir)
        rotated = current.with_name(current.name + ".1")
        assert rotated.exists(), "the log never rotated"
        assert current.stat().st_size <= bound and rotated.stat().st_size <= bound
        assert sorted(p.name for p in current.parent.iterdir()) == ["access.log", "access.log.1"]
        assert stat.S_IMODE(rotated.stat().st_mode) == 0o600
        text = rotated.read_text() + current.read_text()
        assert "/n39 " in text and "/n0 " not in text  # old lines went, the newest stayed
    finally:
        await env.stop()


async def test_receiver_leaves_no_descriptors_after_thousands_of_datagrams(
    tmp_path: Path,
) -> None:
    env = RouterEnv(tmp_path, {"ROUTER_ACCESS_LOG_MAX_BYTES": "200000"})
    try:
        await env.start()
        target = str(socket_dir(env.work_dir) / LOG_SOCKET)
        message = (
            b"H be_http:leak:web s1 200 120 0/0/1/2/3 127.0.0.1:40000 ---- "
            b'leak.example.com /x "GET /x HTTP/1.1"\n'
        )

        async def burst(count: int) -> None:
            # Non-blocking, as HAProxy sends: a full queue waits for the receiver (which
            # shares this loop) instead of blocking it.
            sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sender.setblocking(False)
            try:
                sent = 0
                while sent < count:
                    try:
                        sender.sendto(message, target)
                        sent += 1
                    except BlockingIOError:
                        await asyncio.sleep(0.005)
                    if sent % 200 == 199:
                        await asyncio.sleep(0)
            finally:
                sender.close()

        await burst(500)  # warm-up: the file opened, first-use allocations made
        await asyncio.sleep(0.2)
        probe = LeakProbe(os.getpid(), name="router with access log", rss_growth_kib=8 * 1024)
        before = env.router.access_log.received_count
        for _ in range(10):
            await burst(1000)
        await env.eventually(lambda: _true(env.router.access_log.received_count >= before + 9000))
        await probe.settled(settle=5.0)
        print(probe.summary())
        assert env.router.access_log.written_count >= 9000
    finally:
        await env.stop()


async def _true(value: bool) -> bool:
    return value


def _collect(proc: subprocess.Popen[str], into: list[str]) -> None:
    """Every line ``proc`` prints, as it prints it (until it exits)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        into.append(line)


async def test_shiftnet_logs_router_prints_and_follows_across_rotation(tmp_path: Path) -> None:
    env = RouterEnv(tmp_path, {"ROUTER_ACCESS_LOG_MAX_BYTES": "3000"})
    sn = Shiftnet(f"sqlite:///{tmp_path}/cli.db", env.state_dir)
    follower: subprocess.Popen[str] | None = None
    try:
        await env.start()
        with backends("pod") as pods:
            await env.apply(
                namespace("cli"),
                service("cli", "web"),
                endpoints("cli", "web", pods),
                route("cli", "web", "cli.example.com", "web", annotations=NO_COOKIES),
            )
            await ready(env, "cli.example.com")
            await log_settled(env)  # a readiness request's line may come after a later one's
            assert (await env.get("cli.example.com", "/before")).status == 200
            await lines_with(env, "/before")
            printed = await asyncio.to_thread(sn.ok, "logs", "router", "--tail", "1")
            assert (
                printed.count("\n") == 1 and " route=cli:web " in printed and "/before" in printed
            )
            follower = subprocess.Popen(
                [SHIFTNET, "--store", sn.store, "logs", "router", "-f", "--tail", "0"],
                env=sn.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            printed: list[str] = []
            reader = threading.Thread(target=_collect, args=(follower, printed), daemon=True)
            reader.start()
            marks = 0

            async def caught_up() -> bool:
                """The follower is at the end of the file once it prints a later request."""
                nonlocal marks
                marks += 1
                assert (await env.get("cli.example.com", f"/caught-up-{marks}")).status == 200
                await asyncio.sleep(0.2)
                return any("/caught-up-" in line for line in printed)

            await env.eventually(caught_up, timeout=60)
            for i in range(30):  # about 250 bytes a line: rotates twice
                assert (await env.get("cli.example.com", f"/followed-{i}")).status == 200
                await asyncio.sleep(0.03)
            await lines_with(env, "/followed-29")
            await env.eventually(
                lambda: _true(any("/followed-29 " in line for line in printed)), timeout=30
            )
            follower.terminate()
            await asyncio.to_thread(follower.wait, 10)
            await asyncio.to_thread(reader.join, 10)
            out = "".join(printed)
            seen = [f"/followed-{i} " in out for i in range(30)]
            assert all(seen), f"lines missed by -f: {[i for i, s in enumerate(seen) if not s]}"
            assert "/before " not in out  # --tail 0: only what comes next
        missing = sn.run("logs", "router/other")
        assert missing.returncode != 0
        assert 'router "other" has no access log' in one_error_line(missing.stderr)
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
            follower.wait()
        await env.stop()


def test_shiftnet_router_refuses_a_hostile_capture_name_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sn = Shiftnet(f"sqlite:///{tmp_path}/state.db", home)
    env = sn.env()
    env["ROUTER_CAPTURE_HTTP_REQUEST_HEADERS"] = 'X-A" len 1\n  stats socket /tmp/x:10'
    res = subprocess.run(
        [SHIFTNET, "--store", sn.store, "router", f"--http-port={free_port()}",
         f"--https-port={free_port()}", "--stats-port=0"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode != 0
    line = one_error_line(res.stderr)
    assert "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS=" in line and "not an HTTP token" in line
    assert not (home / "router-router").exists()  # nothing started, nothing written


@contextlib.asynccontextmanager
async def syslog_receiver() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A UDP syslog server on loopback: its ADDR:PORT and the datagrams it received."""
    syslog = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    syslog.bind(("127.0.0.1", 0))
    syslog.setblocking(False)
    received: list[bytes] = []

    async def drain() -> None:  # from the start: a reload alone sends hundreds of notices
        loop = asyncio.get_running_loop()
        while True:
            received.append(await loop.sock_recv(syslog, 65536))

    reader = asyncio.create_task(drain())
    try:
        yield f"127.0.0.1:{syslog.getsockname()[1]}", received
    finally:
        reader.cancel()
        syslog.close()


async def syslog_line_of(env: RouterEnv, received: list[bytes], path: str) -> str:
    """Through the router to a pod of route sys/web at ``path``: the syslog line of it."""
    with backends("pod") as pods:
        await env.apply(
            namespace("sys"),
            service("sys", "web"),
            endpoints("sys", "web", pods),
            route("sys", "web", "sys.example.com", "web", annotations=NO_COOKIES),
        )
        await ready(env, "sys.example.com")
        assert (await env.get("sys.example.com", path)).status == 200

        async def logged() -> bytes | None:
            return next((d for d in received if path.encode() in d), None)

        line: str = (await env.eventually(logged)).decode()
        return line


async def test_syslog_address_gets_openshifts_httplog_lines(tmp_path: Path) -> None:
    async with syslog_receiver() as (address, received):
        env = RouterEnv(tmp_path, {"ROUTER_SYSLOG_ADDRESS": address, "ROUTER_LOG_LEVEL": "info"})
        try:
            await env.start()
            assert env.router.access_log is None  # the syslog server gets the lines instead
            line = await syslog_line_of(env, received, "/to-syslog")
            # RFC 3164 header with facility local1 (17) and level info (6): <142>
            assert line.startswith("<142>")
            assert re.search(r" public be_http:sys:web/s\d+ ", line)  # option httplog's fields
            assert '"GET /to-syslog HTTP/1.1"' in line
            assert not log_path(env.work_dir).exists()
        finally:
            await env.stop()


async def test_syslog_format_shapes_the_lines_the_syslog_server_gets(tmp_path: Path) -> None:
    """ROUTER_SYSLOG_FORMAT replaces option httplog: HAProxy sends lines in that format."""
    fmt = "shiftnet-fmt status=%ST backend=%b server=%s client=%ci %{+Q}r"
    async with syslog_receiver() as (address, received):
        env = RouterEnv(
            tmp_path,
            {
                "ROUTER_SYSLOG_ADDRESS": address,
                "ROUTER_LOG_LEVEL": "info",
                "ROUTER_SYSLOG_FORMAT": fmt,
            },
        )
        try:
            await env.start()
            line = (await syslog_line_of(env, received, "/formatted")).rstrip("\n")
            assert line.startswith("<142>")
            message = line.split("]: ", 1)[1]  # after the header's "haproxy[PID]: "
            assert re.fullmatch(
                r"shiftnet-fmt status=200 backend=be_http:sys:web server=s\d+ "
                r'client=127\.0\.0\.1 "GET /formatted HTTP/1\.1"',
                message,
            ), message
            assert " public be_http:sys:web/" not in line  # not option httplog's fields
        finally:
            await env.stop()


async def test_passthrough_connection_is_logged_with_its_route_by_sni(tmp_path: Path) -> None:
    env = RouterEnv(tmp_path)
    pod_cert = TestCA("pod CA").issue("pass.example.com")
    try:
        await env.start()
        with backends("pass-pod", tls=pod_cert) as pods:
            await env.apply(
                namespace("tcp"),
                service("tcp", "pass"),
                endpoints("tcp", "pass", pods),
                route(
                    "tcp", "pass", "pass.example.com", "pass", tls={"termination": "passthrough"}
                ),
            )
            await ready(env, "pass.example.com", tls=True)
            # (earlier tries, before the route was served, ended in the default backend)
            line = (await lines_with(env, " route=tcp:pass "))[-1]
        # A new route is served by a spare backend at first (no reload): named all the same.
        assert re.search(r" route=tcp:pass backend=be_(tcp:tcp:pass|spare_tcp:\d+) ", line)
        assert line.rstrip().endswith(" host=pass.example.com")  # the SNI
        assert re.search(r" server=s\d+ status=- bytes=\d+ timings=\d+/\d+/\d+ ", line)
    finally:
        await env.stop()


async def test_a_restarted_router_receives_the_adopted_haproxys_log(tmp_path: Path) -> None:
    from shiftnet.router import Router

    env = RouterEnv(tmp_path)
    try:
        await env.start()
        with backends("pod") as pods:
            await env.apply(
                namespace("adopt"),
                service("adopt", "web"),
                endpoints("adopt", "web", pods),
                route("adopt", "web", "adopt.example.com", "web", annotations=NO_COOKIES),
            )
            await ready(env, "adopt.example.com")
            pid = env.router.driver.process.read_pid()
            await env.router.stop(stop_haproxy=False)  # HAProxy keeps serving, and logging
            env.router = Router(env.store, env.config)
            await env.router.start()
            assert env.router.driver.process.read_pid() == pid  # adopted, not restarted
            assert (await env.get("adopt.example.com", "/after-restart")).status == 200
            (line,) = await lines_with(env, "/after-restart")
        assert " route=adopt:web " in line
    finally:
        await env.stop()
