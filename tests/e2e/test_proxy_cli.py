"""`shiftnet proxy` driven as a user: apply a Service and Endpoints, run the proxy,
reach the backend by the ClusterIP, change the endpoints, stop with SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.ports import free_port
from tests.support.scrape import scrape

pytestmark = pytest.mark.integration

MANIFEST = """\
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: default}}
spec:
  clusterIP: {vip}
  ports: [{{name: http, port: {port}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: web, namespace: default}}
subsets:
- addresses: [{{ip: {backend_ip}}}]
  ports: [{{name: http, port: {backend_port}}}]
"""


def shiftnet(home: Path, *args: str, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, "-m", "shiftnet.cli.main", "--state-dir", str(home), *args],
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )


def greeting_server(host: str) -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, 0))
    srv.listen(16)
    return srv, srv.getsockname()[1]


def ask(vip: str, port: int, srv: socket.socket, reply: bytes) -> bytes:
    with socket.create_connection((vip, port), timeout=5) as c:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(reply)
        return c.recv(100)


def wait_port(host: str, port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_proxy_cli_userspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    vip = f"127.30.{os.getpid() % 200 + 20}.9"
    port = free_port(vip)
    srv1, p1 = greeting_server("127.0.0.1")
    srv2, p2 = greeting_server("127.0.0.1")
    prom = free_port("127.0.0.1")
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        MANIFEST.format(vip=vip, port=port, backend_ip="127.0.0.1", backend_port=p1)
    )
    assert shiftnet(home, "apply", "-f", str(manifest)).returncode == 0
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shiftnet.cli.main",
            "--state-dir",
            str(home),
            "proxy",
            "--mode",
            "userspace",
            "--min-sync-interval",
            "0",
            "--metrics-listen",
            f":{prom}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_port(vip, port)
        srv1.accept()[0].close()  # the probe connection of wait_port
        assert ask(vip, port, srv1, b"one") == b"one"
        manifest.write_text(
            MANIFEST.format(vip=vip, port=port, backend_ip="127.0.0.1", backend_port=p2)
        )
        assert shiftnet(home, "apply", "-f", str(manifest)).returncode == 0
        deadline = time.monotonic() + 10
        srv2.settimeout(0.5)
        while True:  # the proxy follows the endpoints change
            try:
                assert ask(vip, port, srv2, b"two") == b"two"
                break
            except (TimeoutError, OSError):
                srv1.settimeout(0.1)
                with contextlib.suppress(OSError):
                    srv1.accept()[0].close()
                assert time.monotonic() < deadline, "endpoints change not applied"
        # kube-proxy's series on loopback: the endpoints change was counted and synced
        found = scrape(f"http://127.0.0.1:{prom}/metrics")
        assert (found.value("kubeproxy_sync_proxy_rules_endpoint_changes_total") or 0) >= 1
        assert found.value("kubeproxy_sync_proxy_rules_endpoint_changes_pending") == 0
        assert found.value("kubeproxy_sync_proxy_rules_last_timestamp_seconds")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
        srv1.close()
        srv2.close()
    assert "userspace mode" in out
    assert f"metrics on http://127.0.0.1:{prom}/metrics" in out
    assert "Traceback" not in err
    assert proc.returncode in (0, 143)


def test_proxy_cli_bad_mode_is_one_sentence(tmp_path: Path) -> None:
    res = shiftnet(tmp_path, "proxy", env={**os.environ, "SHIFTNET_PROXY_MODE": "ipvs"})
    assert res.returncode == 1
    assert (
        res.stderr.strip() == "error: proxy mode 'ipvs' is not one of userspace, iptables, nftables"
    )
