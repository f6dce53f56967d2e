"""``shiftnet router`` as a user runs it: serve, describe, metrics, survive a crash, stop."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.backends import backends
from tests.support.cli import SHIFTNET, Shiftnet, one_error_line
from tests.support.ports import free_port
from tests.support.router import kill_haproxy, request

from shiftnet.router.haproxy.process import socket_dir

pytestmark = pytest.mark.integration

OBJECTS = """\
apiVersion: v1
kind: Namespace
metadata: {{name: shop}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: shop}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: {port}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: web, namespace: shop}}
subsets:
- addresses: [{addresses}]
  ports: [{{name: http, port: {port}}}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {{name: web, namespace: shop}}
spec:
  host: shop.example.com
  to: {{kind: Service, name: web}}
"""


@pytest.fixture
def home() -> Iterator[Path]:
    # Short: HAProxy's internal UNIX socket path must fit in 107 bytes.
    path = Path(tempfile.mkdtemp(prefix="sne-", dir="/tmp"))
    try:
        yield path
    finally:
        kill_haproxy(path / "router-router")
        shutil.rmtree(path, ignore_errors=True)


class RouterProcess:
    def __init__(self, sn: Shiftnet, *flags: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
        env["SHIFTNET_HOME"] = str(sn.home)
        self.proc = subprocess.Popen(
            [SHIFTNET, "--store", sn.store, "router", *flags],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "serving http" in line, (line, self.proc.stderr.read() if self.proc.stderr else "")

    def kill(self, sig: signal.Signals) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)


def wait_200(port: int, host: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            r = request(port, host)
            if r.status == 200:
                return r.backend
            last = r.status
        except OSError as err:
            last = err
        time.sleep(0.05)
    raise AssertionError(f"no 200 from {host} in {timeout}s: {last!r}")


def test_router_command_serves_survives_a_crash_and_stops(home: Path, tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", home)
    http, https, stats, prom = free_port(), free_port(), free_port(), free_port()
    flags = (
        f"--http-port={http}",
        f"--https-port={https}",
        f"--stats-port={stats}",
        "--bind-address=127.0.0.1",
        f"--metrics-listen=127.0.0.1:{prom}",
    )
    with backends("web-1", "web-2", port=free_port()) as pods:
        addresses = ", ".join(
            f"{{ip: {p.ip}, targetRef: {{kind: Pod, name: {p.name}}}}}" for p in pods
        )
        manifest = tmp_path / "shop.yaml"
        manifest.write_text(OBJECTS.format(port=pods[0].port, addresses=addresses))
        router = RouterProcess(sn, *flags)
        try:
            sn.ok("apply", "-f", str(manifest))
            assert wait_200(http, "shop.example.com") in {"web-1", "web-2"}
            described = sn.ok("describe", "route", "web", "-n", "shop")
            assert "exposed on router router" in described
            assert pods[0].ip in described and pods[1].ip in described and "UP" in described
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{prom}/metrics").read().decode()
            assert "template_router_reload_seconds" in metrics
            assert "template_router_reload_failure 0.0" in metrics
            assert "haproxy_up 1.0" in metrics
            assert 'pod="web-1",route="web"' in metrics  # a server series, labelled
            pid_file = socket_dir(home / "router-router") / "haproxy.pid"
            pid = int(pid_file.read_text().split()[0])
            # The router dies hard: HAProxy keeps serving.
            assert router.kill(signal.SIGKILL) == -signal.SIGKILL
            assert wait_200(http, "shop.example.com", timeout=2) in {"web-1", "web-2"}
            # A new router adopts the same HAProxy.
            router = RouterProcess(sn, *flags)
            assert wait_200(http, "shop.example.com") in {"web-1", "web-2"}
            pid_after = int(
                (socket_dir(home / "router-router") / "haproxy.pid").read_text().split()[0]
            )
            assert pid_after == pid
        finally:
            code = router.kill(signal.SIGTERM)
        assert code == 143
        with pytest.raises(OSError):
            request(http, "shop.example.com")


def test_bad_router_flag_is_one_sentence(home: Path, tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", home)
    res = sn.run("router", "--http-port=eighty")
    assert res.returncode == 1
    line = one_error_line(res.stderr)
    assert "--http-port" in line and "eighty" in line
    res = sn.run("router", "--metrics-listen=nowhere")
    assert res.returncode == 1
    assert "--metrics-listen" in one_error_line(res.stderr)


def test_unusable_first_configuration_fails_with_the_reason(home: Path, tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", home)
    bad = tmp_path / "bad-503.http"
    bad.write_text("this is not an HTTP response\n")
    res = sn.run(
        "router",
        f"--http-port={free_port()}",
        f"--https-port={free_port()}",
        "--stats-port=0",
        "--bind-address=127.0.0.1",
        f"--errorfile-503={bad}",
    )
    assert res.returncode == 1
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "bad-503.http" in last, res.stderr
    assert "Traceback" not in res.stderr
    from tests.support.router import haproxy_pids_using

    assert haproxy_pids_using(home) == set()
