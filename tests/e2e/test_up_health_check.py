"""``shiftnet up`` (local mode): a LoadBalancer Service with ``externalTrafficPolicy: Local``
gets a ``healthCheckNodePort`` from the master, the proxy answers kube-proxy's health check
on it, and closes it when the policy goes back to Cluster, which gives the port back. ``up``
runs the proxy in user-space mode, which never opens such a Service's node port, so the
answer is 503 with no local endpoint even though this node runs the Service's pods."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.e2e.test_up import SHIFTNET, UpProcess
from tests.support.kubectl import kube_env, kubectl_json, shiftnet_apply, wait_for
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network, free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

LOCAL_LB = """\
apiVersion: v1
kind: Service
metadata: {name: hello-local, namespace: demo}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: hello}
  ports: [{name: web, port: 8080, targetPort: web}]
"""


def two_free_ports() -> int:
    """The first of two consecutive free loopback ports (a node port range of two)."""
    for _ in range(50):
        first = free_port()
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", first + 1))
            return first
        except OSError:
            continue
    raise AssertionError("no two consecutive free ports")


def health(port: int) -> tuple[int, dict[str, object]]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def closed(port: int) -> bool:
    """Whether nothing answers on ``port`` any more."""
    try:
        health(port)
    except OSError:
        return True
    return False


def local_ready(endpoints: dict[str, object]) -> bool:
    """Whether an Endpoints object has a ready address on node ``e2e``."""
    subsets = endpoints.get("subsets") or []
    return any(
        a.get("nodeName") == "e2e"
        for subset in subsets  # type: ignore[attr-defined]
        for a in subset.get("addresses") or []
    )


def described_rows(env: dict[str, str], *args: str) -> dict[str, str]:
    """``shiftnet describe`` run as a user would, its ``Label: value`` lines as a mapping."""
    done = subprocess.run(
        [str(SHIFTNET), "describe", *args], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    rows = (line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    return {label: value.strip() for label, value in rows if not label.startswith(" ")}


def test_local_load_balancer_health_check_allocated_served_and_released(
    demo_copy: Path,
    up_env: tuple[Path, dict[str, str]],
    tmp_path: Path,
) -> None:
    state, env = up_env
    first = two_free_ports()
    env["SHIFTNET_SERVICE_NODE_PORT_RANGE"] = f"{first}-{first + 1}"
    net = free_cluster_network()
    up = UpProcess(
        ["up", "-f", str(demo_copy), "--node-name", "e2e", "--cluster-network", net],
        cwd=tmp_path,
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        shiftnet_apply(env, LOCAL_LB)
        kenv = kube_env(env, tmp_path)
        svc = wait_for(
            lambda: kubectl_json(kenv, "get", "svc", "hello-local", "-n", "demo"),
            lambda found: bool(found["spec"].get("healthCheckNodePort")),
        )
        spec = svc["spec"]
        hc = spec.get("healthCheckNodePort")
        assert hc == first + 1, spec  # after the service port's node port, as upstream
        described = described_rows(env, "svc", "hello-local", "-n", "demo")
        assert described["Type"] == "LoadBalancer"
        assert described["External Traffic Policy"] == "Local"
        assert described["HealthCheck NodePort"] == str(hc)
        # the node's hello pods are ready endpoints of the Service ...
        wait_for(
            lambda: kubectl_json(kenv, "get", "endpoints", "hello-local", "-n", "demo"),
            local_ready,
            timeout=60,
        )
        # ... but user-space never opens a Local Service's node port, so its health check
        # says no local endpoint (503), and keeps saying it
        status, body = wait_for(lambda: health(int(hc)), lambda _: True, retry_on=(OSError,))
        settled = time.monotonic() + 3  # the proxy syncs within 0.1 s of a change
        while True:
            assert status == 503, body
            assert body == {
                "service": {"namespace": "demo", "name": "hello-local"},
                "localEndpoints": 0,
                "serviceProxyHealthy": True,
            }
            if time.monotonic() > settled:
                break
            time.sleep(0.2)
            status, body = health(int(hc))
        node_port = spec["ports"][0]["nodePort"]
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", int(node_port))) != 0, "node port opened"
        # back to the Cluster policy: the port is given back and the proxy closes it
        shiftnet_apply(
            env, LOCAL_LB.replace("externalTrafficPolicy: Local", "externalTrafficPolicy: Cluster")
        )
        wait_for(lambda: closed(int(hc)), bool)  # the health check port stops answering
        svc = kubectl_json(kenv, "get", "svc", "hello-local", "-n", "demo")
        assert "healthCheckNodePort" not in svc["spec"]
        described = described_rows(env, "svc", "hello-local", "-n", "demo")
        assert described["External Traffic Policy"] == "Cluster"
        assert "HealthCheck NodePort" not in described
        os.killpg(up.proc.pid, signal.SIGINT)
        assert up.proc.wait(timeout=60) == 0, up.rest()
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy, by pid
