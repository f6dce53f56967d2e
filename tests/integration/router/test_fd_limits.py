"""Many health-checked servers under a low descriptor limit: HAProxy still starts and serves.

HAProxy 2.6 reserves a descriptor per checked ``server`` line and, with its
default ``strict-limits``, refuses to start when ``2 * maxconn`` plus those
no longer fit the hard ``RLIMIT_NOFILE``. The renderer fits ``maxconn`` to
the checked lines it wrote (``limits.fit_maxconn``); these tests run the real
HAProxy under a lowered limit to show the unfitted configuration fails and
the fitted one serves, through the renderer and through ``shiftnet router``.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support import routes as f
from tests.support.backends import Backend, backends
from tests.support.cli import SHIFTNET, Shiftnet
from tests.support.ports import free_port
from tests.support.router import kill_haproxy, request

from shiftnet.client import Client
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.files import write_file_set
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

ROUTES = 300  # two pods each: four checked slot lines per route, 1,200 in all


def _limit(nofile: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))


@contextlib.contextmanager
def haproxy_under(conf: Path, nofile: int, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """HAProxy in the foreground under ``nofile`` descriptors; killed by its pid at the end."""
    proc = subprocess.Popen(
        ["haproxy", "-db", "-f", "haproxy.cfg"],
        cwd=conf,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: _limit(nofile),
    )
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                request(port, "probe", "/_______internal_router_healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _render(tmp: Path, pods: list[Backend], http_port: int, **config: int) -> str:
    cfg = RouterConfig(
        http_port=http_port,
        https_port=free_port(),
        stats_port=0,
        threads=1,
        bind_address="127.0.0.1",
        health_check_interval_ms=60_000,
        share_backends=False,  # every route's checked servers count, as with distinct pods
        **config,  # type: ignore[arg-type]
    )
    routes = [f.route(f"r{i}", f"h{i}.example.com", service=f"s{i}") for i in range(ROUTES)]
    eps = [
        f.endpoints(f"s{i}", [p.ip for p in pods], [("http", pods[0].port)]) for i in range(ROUTES)
    ]
    run = tmp / "run"
    run.mkdir(exist_ok=True)
    pem = tmp / "default.pem"
    if not pem.exists():
        from tests.support.tls import TestCA

        cert = TestCA().issue("default.example")
        pem.write_text(cert.cert_pem + cert.key_pem)
    result = render(build_model(admit(routes, [], cfg), eps), cfg, RenderPaths(str(run), str(pem)))
    shutil.rmtree(tmp / "conf", ignore_errors=True)
    write_file_set(tmp / "conf", result.files)
    return result.files["haproxy.cfg"].decode()


def test_fitted_maxconn_starts_where_the_unfitted_one_is_refused(tmp_path: Path) -> None:
    http_port = free_port()
    with backends("pod-a", "pod-b", port=free_port()) as pods:
        # Unfitted: maxconn 1500 needs 3,000 + 1,200 checks + a few > 4,000.
        text = _render(tmp_path, pods, http_port, max_connections=1500)
        assert "  maxconn 1500\n" in text and text.count(" check inter ") == 4 * ROUTES
        with haproxy_under(tmp_path / "conf", 4000, http_port) as proc:
            assert proc.wait(timeout=15) != 0
            out = proc.stdout.read().decode() if proc.stdout else ""
            assert "Cannot raise FD limit" in out, out

        # Fitted to the 1,200 checked lines: starts and serves every route.
        text = _render(tmp_path, pods, http_port, max_connections=1500, file_descriptor_limit=4000)
        assert "  maxconn 1500\n" not in text and "no strict-limits" not in text
        with haproxy_under(tmp_path / "conf", 4000, http_port) as proc:
            assert proc.poll() is None
            for i in (0, ROUTES // 2, ROUTES - 1):
                assert request(http_port, f"h{i}.example.com").backend in {"pod-a", "pod-b"}


def test_checks_beyond_the_limit_start_without_strict_limits(tmp_path: Path) -> None:
    http_port = free_port()
    with backends("pod-a", "pod-b", port=free_port()) as pods:
        # 1,200 checked lines alone nearly fill 1,500 descriptors.
        text = _render(tmp_path, pods, http_port, max_connections=1500, file_descriptor_limit=1500)
        assert "  no strict-limits\n" in text
        with haproxy_under(tmp_path / "conf", 1500, http_port) as proc:
            assert proc.poll() is None
            for i in (0, ROUTES - 1):
                assert request(http_port, f"h{i}.example.com").backend in {"pod-a", "pod-b"}


async def _write_routes(store_url: str, pods: list[Backend]) -> None:
    store = open_store(store_url)
    client = Client(store)
    try:
        from shiftnet.api import Namespace

        await client.create(
            Namespace.model_validate(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
            )
        )
        for i in range(ROUTES):
            await client.create(f.service(f"s{i}", [("http", 80, pods[0].port)]))
            await client.create(
                f.endpoints(f"s{i}", [p.ip for p in pods], [("http", pods[0].port)])
            )
            await client.create(f.route(f"r{i}", f"h{i}.example.com", service=f"s{i}"))
    finally:
        await store.close()


def test_router_under_a_low_descriptor_limit_serves_and_says_so_once(tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="snfd-", dir="/tmp"))  # short socket paths
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", home)
    http = free_port()
    try:
        with backends("pod-a", "pod-b", port=free_port()) as pods:
            asyncio.run(_write_routes(sn.store, pods))
            proc = subprocess.Popen(
                [
                    SHIFTNET,
                    "--store",
                    sn.store,
                    "router",
                    f"--http-port={http}",
                    f"--https-port={free_port()}",
                    "--stats-port=0",
                    "--bind-address=127.0.0.1",
                ],
                env={**sn.env(), "ROUTER_BACKEND_CHECK_INTERVAL": "60s"},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=lambda: _limit(4000),
            )
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                assert "serving http" in line, (line, proc.stderr.read() if proc.stderr else "")
                for i in (0, ROUTES - 1):
                    assert request(http, f"h{i}.example.com").backend in {"pod-a", "pod-b"}
            finally:
                proc.terminate()
                _, err = proc.communicate(timeout=30)
            assert err.count("maxconn fitted to the checked servers") == 1, err
            assert "Cannot raise FD limit" not in err
    finally:
        kill_haproxy(home / "router-router")
        shutil.rmtree(home, ignore_errors=True)
