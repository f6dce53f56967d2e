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


def test_slot_commands_only_for_server_slot_changes() -> None:
    from shiftnet.router.haproxy.driver import slot_commands

    old = (
        "frontend f\n  bind :1\nbackend b\n  balance roundrobin\n"
        "  server s0 127.0.0.1:1 cookie c0 check weight 0 disabled\n"
        "  server s1 127.10.0.2:80 cookie c1 check weight 256\n"
    )
    new = old.replace(
        "127.0.0.1:1 cookie c0 check weight 0 disabled", "127.10.0.3:81 cookie c0 check weight 5"
    )
    assert slot_commands(old, old) == []
    assert slot_commands(old, new) == [
        "set server b/s0 addr 127.10.0.3 port 81",
        "set server b/s0 weight 5",
        "set server b/s0 state ready",
    ]
    assert slot_commands(old, new.replace("cookie c0", "cookie zz")) is None  # other option
    assert slot_commands(old, new.replace("roundrobin", "leastconn")) is None  # not a server
    assert slot_commands(old, new + "  server s2 127.0.0.1:1 weight 0 disabled\n") is None
    frontend = "frontend f\n  server s0 127.0.0.1:1\n"
    assert slot_commands(frontend, frontend.replace(":1", ":2")) is None


def test_map_commands() -> None:
    from shiftnet.router.haproxy.driver import map_commands

    old = b"a.example.com/ be_a\nb.example.com/ be_b\n"
    new = b"b.example.com/ be_c\nc.example.com/x be_c\n"
    assert map_commands("os_http_prefix.map", old, new) == [
        "del map os_http_prefix.map a.example.com/",
        "set map os_http_prefix.map b.example.com/ be_c",
        "add map os_http_prefix.map c.example.com/x be_c",
    ]
    assert map_commands("m.map", old, old) == []


def test_slot_commands_agree_with_a_full_parse() -> None:
    """Random slot edits across many backends: the region diff equals a full comparison."""
    import random

    from shiftnet.router.haproxy.driver import slot_commands

    rng = random.Random(7)

    def config(slots: dict[tuple[int, int], tuple[str, int, int]]) -> str:
        lines = ["global", "  maxconn 10", "frontend f", "  bind :1"]
        for b in range(40):
            lines += [f"backend be{b}", "  balance roundrobin"]
            for k in range(4):
                ip, port, w = slots[(b, k)]
                tail = " disabled" if w == 0 else ""
                lines.append(f"  server s{k} {ip}:{port} cookie c{b}{k} check weight {w}{tail}")
        return "\n".join(lines) + "\n"

    spare = ("127.0.0.1", 1, 0)
    for _ in range(200):
        old = {(b, k): spare for b in range(40) for k in range(4)}
        for key in rng.sample(sorted(old), 60):
            old[key] = (f"127.10.{rng.randrange(9)}.{rng.randrange(1, 99)}", 8080, 1)
        new = dict(old)
        for key in rng.sample(sorted(new), rng.randrange(1, 6)):
            new[key] = rng.choice([spare, (f"127.11.0.{rng.randrange(1, 250)}", 80, 3)])
        expected = server_commands(parse_servers(config(old)), parse_servers(config(new)))
        assert slot_commands(config(old), config(new)) == expected
