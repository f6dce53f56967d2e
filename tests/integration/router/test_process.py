"""Real HAProxy under HAProxyProcess: start, check, reload, adopt, restart, limits."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest
from tests.support.router import (
    aget,
    haproxy_pids_using,
    http_get,
    kill_haproxy,
    port,
    write_minimal,
)

from shiftnet.router.haproxy.process import (
    ConfigCheckFailed,
    HAProxyProcess,
    ReloadFailed,
    fit_limits,
)

pytestmark = pytest.mark.integration


async def test_start_reload_serves_new_config(haproxy_process: HAProxyProcess) -> None:
    p = port()
    write_minimal(haproxy_process.work_dir, port=p, text="one")
    await haproxy_process.check(haproxy_process.config_path)
    assert await haproxy_process.ensure_running() is True
    assert await aget(p) == (200, "one")
    before = await haproxy_process.status()
    write_minimal(haproxy_process.work_dir, port=p, text="two")
    st = await haproxy_process.reload()
    assert st.reloads == before.reloads + 1
    assert st.master_pid == before.master_pid
    assert await aget(p) == (200, "two")


async def test_invalid_config_is_refused_by_check(haproxy_process: HAProxyProcess) -> None:
    bad = haproxy_process.work_dir / "bad.cfg"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("global\n  no-such-keyword 1\n")
    with pytest.raises(ConfigCheckFailed) as err:
        await haproxy_process.check(bad)
    assert "no-such-keyword" in str(err.value)


async def test_fd_limit_sizes_maxconn() -> None:
    limits = fit_limits(50000, nofile=20000, cpus=2)
    assert limits.maxconn < 10000 and limits.capped and limits.nbthread == 2
    assert fit_limits(2000, nofile=20000).maxconn == 2000


async def test_openshift_default_maxconn_fails_but_sized_one_serves(
    haproxy_process: HAProxyProcess,
) -> None:
    """50,000 connections cannot start under a 20,000 fd limit; the old worker keeps serving."""
    p = port()
    write_minimal(haproxy_process.work_dir, port=p, text="sized")
    await haproxy_process.ensure_running()
    cfg = haproxy_process.config_path
    text = cfg.read_text()
    import re

    cfg.write_text(re.sub(r"maxconn \d+", "maxconn 50000", text).replace("sized", "huge"))
    await haproxy_process.check(cfg)  # haproxy -c does not see the fd limit ...
    with pytest.raises(ReloadFailed):  # ... but the master refuses to load it
        await haproxy_process.reload()
    assert await aget(p) == (200, "sized")


async def test_adopt_after_router_death_and_stop(haproxy_process: HAProxyProcess) -> None:
    p = port()
    write_minimal(haproxy_process.work_dir, port=p)
    await haproxy_process.ensure_running()
    pid = haproxy_process.read_pid()
    # A second router process object on the same dir (the router restarted): adopts.
    again = HAProxyProcess(haproxy_process.work_dir)
    assert await again.adopt() is True
    assert await again.ensure_running() is False
    assert again.read_pid() == pid
    assert await aget(p) == (200, "ok")
    await again.stop()
    assert not again.alive()
    with pytest.raises(OSError):
        http_get(p)


async def test_restart_if_dead_restarts_killed_haproxy(haproxy_process: HAProxyProcess) -> None:
    p = port()
    write_minimal(haproxy_process.work_dir, port=p)
    await haproxy_process.ensure_running()
    old = haproxy_process.read_pid()
    assert old is not None
    await haproxy_process.restart_if_dead()
    assert haproxy_process.restarts == 0  # alive: left alone
    os.kill(old, signal.SIGKILL)
    for _ in range(200):
        await asyncio.sleep(0.05)
        await haproxy_process.restart_if_dead()
        if haproxy_process.restarts:
            break
    assert haproxy_process.restarts == 1
    assert haproxy_process.read_pid() != old
    assert await aget(p) == (200, "ok")


async def test_zero_failed_requests_through_50_reloads(haproxy_process: HAProxyProcess) -> None:
    p = port()
    write_minimal(haproxy_process.work_dir, port=p, text="v0")
    await haproxy_process.ensure_running()
    stop = threading.Event()
    results: list[int] = []
    failures: list[str] = []

    def client() -> None:
        while not stop.is_set():
            try:
                status, _ = http_get(p)
                results.append(status)
                if status != 200:
                    failures.append(f"status {status}")
            except OSError as err:
                failures.append(repr(err))

    threads = [threading.Thread(target=client) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(1, 51):
            write_minimal(haproxy_process.work_dir, port=p, text=f"v{i}")
            await haproxy_process.reload()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert await aget(p) == (200, "v50")
    assert len(results) > 100
    assert failures == []
    st = await haproxy_process.status()
    assert st.reloads >= 50


def test_cleanup_kills_by_pid(tmp_path) -> None:  # type: ignore[no-untyped-def]
    async def run() -> int | None:
        proc = HAProxyProcess(tmp_path)
        write_minimal(tmp_path, port=port())
        await proc.ensure_running()
        return proc.read_pid()

    pid = asyncio.run(run())
    assert pid is not None
    kill_haproxy(tmp_path)
    assert haproxy_pids_using(tmp_path) == set()


async def test_old_workers_are_bounded_by_hard_stop_after(haproxy_process: HAProxyProcess) -> None:
    """A client holding a connection keeps an old worker alive only until hard-stop-after."""
    import socket

    p = port()
    write_minimal(haproxy_process.work_dir, port=p, hard_stop_after="1s")
    await haproxy_process.ensure_running()
    held = socket.create_connection(("127.0.0.1", p))  # idle keep-alive, never finished
    try:
        first = (await haproxy_process.status()).workers
        write_minimal(haproxy_process.work_dir, port=p, text="new", hard_stop_after="1s")
        st = await haproxy_process.reload()
        assert set(first) <= set(st.old_workers)  # still serving the held connection
        for _ in range(100):
            await asyncio.sleep(0.1)
            st = await haproxy_process.status()
            if not st.old_workers:
                break
        assert st.old_workers == ()
        assert await aget(p) == (200, "new")
    finally:
        held.close()
