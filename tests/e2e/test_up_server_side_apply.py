"""``kubectl apply --server-side`` against a running ``shiftnet up``: a Service and a Route
applied, served by the router, re-applied after the master and router wrote to them
(no write), edited, refused to another manager, and taken over with force."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_up import SHIFTNET, UpProcess, through_router
from tests.support.kubectl import kube_env, kubectl, kubectl_json, wait_for
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

APPLIED = """\
apiVersion: v1
kind: Service
metadata: {name: ssa-web, namespace: mynamespace}
spec:
  selector: {app: s1}
  ports: [{name: http, port: 8080, targetPort: web}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: ssa, namespace: mynamespace}
spec:
  host: ssa.example.com
  to: {kind: Service, name: ssa-web}
"""


class Kubectl:
    """kubectl in namespace ``mynamespace``, applying from a file as a user does."""

    def __init__(self, env: dict[str, str], tmp_path: Path) -> None:
        self.env = kube_env(env, tmp_path)
        self.manifest = tmp_path / "applied.yaml"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return kubectl(self.env, "-n", "mynamespace", *args)

    def apply(self, text: str, *flags: str) -> subprocess.CompletedProcess[str]:
        self.manifest.write_text(text)
        return self.run("apply", "--server-side", *flags, "-f", str(self.manifest))

    def get(self, *what: str) -> Any:
        return kubectl_json(self.env, "-n", "mynamespace", "get", *what)


def _settled(kubectl: Kubectl, timeout: float = 30) -> tuple[str, str]:
    """The resourceVersions once the master gave the Service its address and the
    router admitted the Route (their writes come first)."""

    def done(got: tuple[Any, Any]) -> bool:
        svc, route = got
        return bool(svc["spec"].get("clusterIP") and route.get("status", {}).get("ingress"))

    def both() -> tuple[Any, Any]:
        return kubectl.get("svc", "ssa-web"), kubectl.get("route", "ssa")

    svc, route = wait_for(both, done, timeout)
    return svc["metadata"]["resourceVersion"], route["metadata"]["resourceVersion"]


def test_server_side_apply_on_a_running_cluster(
    demo_copy: Path,
    up_env: tuple[Path, dict[str, str]],
    tmp_path: Path,
) -> None:
    state, env = up_env
    net = free_cluster_network()
    up = UpProcess(
        ["up", "-f", str(demo_copy), "--node-name", "e2e", "--cluster-network", net],
        cwd=tmp_path,
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        kubectl = Kubectl(env, tmp_path)
        made = kubectl.apply(APPLIED)
        assert made.returncode == 0, made.stderr
        assert made.stdout.split("\n")[:2] == [
            "service/ssa-web serverside-applied",
            "route.route.openshift.io/ssa serverside-applied",
        ]
        http_port = env["ROUTER_SERVICE_HTTP_PORT"]
        assert "pod=" in through_router(http_port, "ssa.example.com", "/applied")
        before = _settled(kubectl)
        again = kubectl.apply(APPLIED)
        assert again.returncode == 0, again.stderr
        assert _settled(kubectl) == before  # nothing written: the controllers' fields kept

        edited = APPLIED.replace("ssa.example.com", "ssa2.example.com")
        assert kubectl.apply(edited).returncode == 0
        assert "pod=" in through_router(http_port, "ssa2.example.com", "/edited")

        stolen = edited.replace("ssa2.example.com", "other.example.com")
        refused = kubectl.apply(stolen, "--field-manager=other")
        assert refused.returncode == 1
        assert refused.stderr.startswith(
            'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.host\n'
        )
        assert kubectl.get("route", "ssa")["spec"]["host"] == "ssa2.example.com"
        forced = kubectl.apply(stolen, "--field-manager=other", "--force-conflicts")
        assert forced.returncode == 0, forced.stderr
        assert "pod=" in through_router(http_port, "other.example.com", "/taken")
        # shiftnet get, as kubectl, shows the ownership records only when asked
        shown = [
            subprocess.run(
                [str(SHIFTNET), "get", "route", "ssa", "-n", "mynamespace", "-o", "yaml", *flag],
                env=env, capture_output=True, text=True, timeout=60, check=True,
            ).stdout
            for flag in ((), ("--show-managed-fields",))
        ]  # fmt: skip
        assert "managedFields" not in shown[0] and "host: other.example.com" in shown[0]
        assert "manager: other" in shown[1], shown[1]
        os.killpg(up.proc.pid, signal.SIGINT)
        assert up.proc.wait(timeout=60) == 0, up.rest()
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy, by pid
