"""HAProxyDriver against real HAProxy with hand-made file sets."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.backends import backends
from tests.support.router import aget, haproxy_cleanup, minimal_config, port

from shiftnet.router import metrics
from shiftnet.router.haproxy.driver import HAProxyDriver, parse_servers, server_commands

pytestmark = pytest.mark.integration


def files(work: Path, **kw: object) -> dict[str, bytes]:
    return {
        "haproxy.cfg": minimal_config(work, **kw).encode(),  # type: ignore[arg-type]
        "hosts.map": b"",
    }


@pytest.fixture
async def driver(tmp_path: Path):  # type: ignore[no-untyped-def]
    work = tmp_path / "router"
    d = HAProxyDriver(work, reload_interval=0.0)
    with haproxy_cleanup(work):
        await d.start()
        try:
            yield d
        finally:
            await d.stop()


async def test_endpoint_change_without_reload(driver: HAProxyDriver) -> None:
    w, p = driver.work_dir, port()
    with backends("pod-a", "pod-b") as (a, b):
        await driver.apply(files(w, port=p, servers=[("s0", a.ip, a.port)], spare_slots=3))
        await driver.flush()
        assert driver.reloads == 0 and driver.process.alive()
        assert (await aget(p, "/", "x"))[1].strip() == "pod-a"
        reloads = (await driver.process.status()).reloads
        # pod-b appears, pod-a goes: the renderer fills a spare slot and empties one.
        servers = [("s0", b.ip, b.port)]
        await driver.apply(files(w, port=p, servers=servers, spare_slots=3))
        assert driver.runtime_applies == 1
        assert (await aget(p, "/", "x"))[1].strip() == "pod-b"
        assert (await driver.process.status()).reloads == reloads
        assert (driver.process.conf_dir / "haproxy.cfg").read_text() == minimal_config(
            w, port=p, servers=servers, spare_slots=3
        )


async def test_structural_change_reloads_and_slot_overflow_counts_fallback(
    driver: HAProxyDriver,
) -> None:
    w, p = driver.work_dir, port()
    with backends("pod-a", "pod-b") as (a, b):
        await driver.apply(files(w, port=p, servers=[("s0", a.ip, a.port)]))
        await driver.flush()
        before = (
            metrics.REGISTRY.get_sample_value(
                "shiftnet_router_runtime_fallbacks_total", {"reason": "server-slots"}
            )
            or 0
        )
        await driver.apply(files(w, port=p, servers=[("s0", a.ip, a.port), ("s1", b.ip, b.port)]))
        await driver.flush()
        assert driver.fallbacks == 1 and driver.reloads == 1
        after = metrics.REGISTRY.get_sample_value(
            "shiftnet_router_runtime_fallbacks_total", {"reason": "server-slots"}
        )
        assert after == before + 1
        seen = {(await aget(p, "/", "x"))[1].strip() for _ in range(6)}
        assert seen == {"pod-a", "pod-b"}


async def test_invalid_config_never_replaces_running_one(driver: HAProxyDriver) -> None:
    w, p = driver.work_dir, port()
    good = files(w, port=p, text="good")
    await driver.apply(good)
    await driver.flush()
    bad = dict(good)
    bad["haproxy.cfg"] = good["haproxy.cfg"].replace(b"good", b"bad") + b"backend x\n  bogus 1\n"
    await driver.apply(bad)
    await driver.flush()
    assert driver.last_error is not None and "bogus" in str(driver.last_error)
    assert metrics.REGISTRY.get_sample_value("template_router_reload_failure") == 1
    assert await aget(p) == (200, "good")
    assert (driver.process.conf_dir / "haproxy.cfg").read_bytes() == good["haproxy.cfg"]
    await driver.apply(files(w, port=p, text="fixed"))
    await driver.flush()
    assert driver.last_error is None and await aget(p) == (200, "fixed")
    assert metrics.REGISTRY.get_sample_value("template_router_reload_failure") == 0


async def test_restarted_router_adopts_without_reload(tmp_path: Path) -> None:
    work, p = tmp_path / "router", port()
    with haproxy_cleanup(work):
        first = HAProxyDriver(work, reload_interval=0.0)
        await first.start()
        await first.apply(files(work, port=p))
        await first.flush()
        pid = first.process.read_pid()
        await first.stop(stop_haproxy=False)  # the router "dies"; HAProxy keeps serving
        assert await aget(p) == (200, "ok")
        second = HAProxyDriver(work, reload_interval=0.0)
        await second.start()
        await second.apply(files(work, port=p))
        await second.flush()
        assert second.process.read_pid() == pid
        assert second.reloads == 0 and (await second.process.status()).reloads == 0
        await second.stop()
        assert not second.process.alive()


def test_server_commands_order() -> None:
    old = parse_servers("backend b\n  server s0 127.0.0.1:1 weight 1 disabled check\n")
    new = parse_servers("backend b\n  server s0 127.0.0.9:80 weight 3 check\n")
    assert old.skeleton == new.skeleton
    assert server_commands(old, new) == [
        "set server b/s0 addr 127.0.0.9 port 80",
        "set server b/s0 weight 3",
        "set server b/s0 state ready",
    ]
    assert server_commands(new, old)[0] == "set server b/s0 state maint"


def test_map_commands() -> None:
    from shiftnet.router.haproxy.live import map_commands

    old = b"a.example.com/ be_a\nb.example.com/ be_b\n"
    new = b"b.example.com/ be_c\nc.example.com/x be_c\n"
    assert map_commands("os_http_prefix.map", old, new) == [
        "del map os_http_prefix.map a.example.com/",
        "set map os_http_prefix.map b.example.com/ be_c",
        "add map os_http_prefix.map c.example.com/x be_c",
    ]
    assert map_commands("m.map", old, old) == []
