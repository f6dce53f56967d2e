"""HAProxyDriver against real HAProxy with file sets rendered from small models."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support import routes as f
from tests.support.backends import Backend, backends
from tests.support.ports import free_port
from tests.support.router import aget, haproxy_cleanup, port
from tests.support.tls import TestCA

from shiftnet.router import metrics
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.description import Description
from shiftnet.router.haproxy.driver import HAProxyDriver
from shiftnet.router.haproxy.process import socket_dir
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model

pytestmark = pytest.mark.integration
HOST = "x.example.com"
_HTTPS_PORTS: dict[int, int] = {}  # HTTP port -> the HTTPS port beside it (stable per test)


def files(
    work: Path,
    port: int,
    pods: list[Backend] = (),
    **config: object,  # type: ignore[assignment]
) -> tuple[dict[str, bytes], Description]:
    """One route on ``HOST`` (HTTP on ``port``) to ``pods``, rendered: files and description."""
    pem = work.parent / "default.pem"
    if not pem.exists():
        cert = TestCA().issue("default.example")
        pem.write_text(cert.cert_pem + cert.key_pem)
    cfg = RouterConfig(
        http_port=port,
        https_port=_HTTPS_PORTS.setdefault(port, free_port()),
        stats_port=0,
        threads=1,
        max_connections=2000,
        spare_backends=1,
        load_balance_algorithm="roundrobin",
        **config,  # type: ignore[arg-type]
    )
    eps = [f.endpoints("svc", [b.ip for b in pods], [("http", pods[0].port)])] if pods else []
    model = build_model(admit([f.route("r", HOST)], [], cfg), eps)
    result = render(model, cfg, RenderPaths(str(socket_dir(work)), str(pem)))
    return result.files, result.description


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
    with backends("pod-a", "pod-b", port=free_port()) as (a, b):
        await driver.apply(*files(w, p, [a]))
        await driver.flush()
        assert driver.reloads == 0 and driver.process.alive()
        assert (await aget(p, "/", HOST))[1].strip() == "pod-a"
        reloads = (await driver.process.status()).reloads
        # pod-b appears, pod-a goes: the renderer fills an empty slot and empties one.
        new = files(w, p, [b])
        await driver.apply(*new)
        assert driver.runtime_applies == 1
        assert (await aget(p, "/", HOST))[1].strip() == "pod-b"
        assert (await driver.process.status()).reloads == reloads
        assert (driver.process.conf_dir / "haproxy.cfg").read_bytes() == new[0]["haproxy.cfg"]


async def test_structural_change_reloads_and_slot_overflow_counts_fallback(
    driver: HAProxyDriver,
) -> None:
    w, p = driver.work_dir, port()
    with backends("pod-a", "pod-b", "pod-c", "pod-d", port=free_port()) as pods:
        await driver.apply(*files(w, p, pods[:1]))
        await driver.flush()
        before = (
            metrics.REGISTRY.get_sample_value(
                "shiftnet_router_runtime_fallbacks_total", {"reason": "server-slots"}
            )
            or 0
        )
        # Four pods need eight slots: more than the loaded backend has.
        await driver.apply(*files(w, p, pods))
        await driver.flush()
        assert driver.fallbacks == 1 and driver.reloads == 1
        after = metrics.REGISTRY.get_sample_value(
            "shiftnet_router_runtime_fallbacks_total", {"reason": "server-slots"}
        )
        assert after == before + 1
        seen = {(await aget(p, "/", HOST))[1].strip() for _ in range(12)}
        assert seen == {"pod-a", "pod-b", "pod-c", "pod-d"}


async def test_invalid_config_never_replaces_running_one(driver: HAProxyDriver) -> None:
    w, p = driver.work_dir, port()
    with backends("good", "fixed", port=free_port()) as (good_pod, fixed_pod):
        good = files(w, p, [good_pod])
        await driver.apply(*good)
        await driver.flush()
        # An error page HAProxy cannot open: the check refuses the whole set.
        bad = files(w, p, [good_pod], errorfile_503=str(w.parent / "bogus-503.http"))
        await driver.apply(*bad)
        await driver.flush()
        assert driver.last_error is not None and "bogus-503" in str(driver.last_error)
        assert metrics.REGISTRY.get_sample_value("template_router_reload_failure") == 1
        assert (await aget(p, "/", HOST))[1].strip() == "good"
        assert (driver.process.conf_dir / "haproxy.cfg").read_bytes() == good[0]["haproxy.cfg"]
        await driver.apply(*files(w, p, [fixed_pod], client_timeout_ms=31_000))
        await driver.flush()
        assert driver.last_error is None
        assert (await aget(p, "/", HOST))[1].strip() == "fixed"
        assert metrics.REGISTRY.get_sample_value("template_router_reload_failure") == 0


async def test_restarted_router_adopts_without_reload(tmp_path: Path) -> None:
    work, p = tmp_path / "router", port()
    with haproxy_cleanup(work):
        first = HAProxyDriver(work, reload_interval=0.0)
        await first.start()
        await first.apply(*files(work, p))
        await first.flush()
        pid = first.process.read_pid()
        await first.stop(stop_haproxy=False)  # the router "dies"; HAProxy keeps serving
        assert (await aget(p, "/", HOST))[0] == 503  # served: the route has no pod yet
        second = HAProxyDriver(work, reload_interval=0.0)
        await second.start()
        await second.apply(*files(work, p))
        await second.flush()
        assert second.process.read_pid() == pid
        assert second.reloads == 0 and (await second.process.status()).reloads == 0
        await second.stop()
        assert not second.process.alive()


async def test_a_refused_check_is_retried_without_a_new_change(tmp_path: Path) -> None:
    work, p = tmp_path / "router", port()
    error_page = tmp_path / "503.http"
    driver = HAProxyDriver(work, reload_interval=0.0, retry_interval=0.5)
    with haproxy_cleanup(work), backends("pod-a", port=free_port()) as (pod,):
        await driver.start()
        try:
            await driver.apply(*files(work, p, [pod], errorfile_503=str(error_page)))
            await driver.flush()
            assert driver.last_error is not None and not driver.process.alive()
            # The file the configuration names appears; nobody applies anything.
            error_page.write_bytes(b"HTTP/1.0 503 Service Unavailable\r\n\r\nsorry\n")
            for _ in range(100):
                if driver.last_error is None:
                    break
                await asyncio.sleep(0.1)
            assert driver.last_error is None and driver.process.alive()
            assert (await aget(p, "/", HOST))[1].strip() == "pod-a"
        finally:
            await driver.stop()
