"""Components that know the cluster only through a kubeconfig (``--kubeconfig``, ``kube://``).

A real ``shiftnet apiserver`` serves a SQLite store of its own; the node agent,
the master and the router are given only a copy of its kubeconfig (their
state directories hold no store), as on another machine. Objects are made
with the real kubectl.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.apiserver import APIServerProcess
from tests.support.backends import backends
from tests.support.cli import SHIFTNET
from tests.support.ports import free_cluster_network, free_port
from tests.support.router import kill_haproxy, request

from shiftnet.sdn.pidfiles import process_start_time, read_record

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
PODSERVER = REPO / "examples" / "demo" / "podserver.py"


class Component:
    """One ``shiftnet`` process with a home of its own and only a kubeconfig."""

    def __init__(self, home: Path, kubeconfig: Path, *args: str) -> None:
        home.mkdir(mode=0o700, exist_ok=True)
        self.home = home
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIFTNET_", "KUBE"))}
        env["HOME"] = str(home)
        self.proc = subprocess.Popen(
            [SHIFTNET, "--kubeconfig", str(kubeconfig), "--state-dir", str(home), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(timeout=10)

    def output(self) -> str:
        """What the process printed (after it stopped)."""
        out = self.proc.stdout.read() if self.proc.stdout else ""
        err = self.proc.stderr.read() if self.proc.stderr else ""
        return out + err


@pytest.fixture
def api(tmp_path: Path) -> Iterator[APIServerProcess]:
    home = tmp_path / "server"
    home.mkdir(mode=0o700)
    srv = APIServerProcess(home)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def components() -> Iterator[list[Component]]:
    started: list[Component] = []
    try:
        yield started
    finally:
        for c in started:
            c.stop()


def copied_kubeconfig(api: APIServerProcess, home: Path) -> Path:
    """The server's kubeconfig, copied as a user would to another machine."""
    home.mkdir(mode=0o700, exist_ok=True)
    dest = home / "kubeconfig"
    shutil.copyfile(api.kubeconfig, dest)
    dest.chmod(0o600)
    return dest


def wait_json(
    api: APIServerProcess, args: list[str], ok: Callable[[Any], bool], timeout: float = 60
) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        res = api.kubectl(*args, "-o", "json")
        if res.returncode == 0:
            last = json.loads(res.stdout)
            if ok(last):
                return last
        time.sleep(0.3)
    raise AssertionError(f"timed out: kubectl {' '.join(args)}: {json.dumps(last)[:2000]}")


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: far-web
  namespace: default
  labels: {{app: far}}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: web
    command: [{python}, {podserver}]
    ports: [{{name: web, containerPort: 8080}}]
    readinessProbe:
      httpGet: {{path: /healthz, port: web}}
      periodSeconds: 1
"""


def test_a_node_with_only_a_kubeconfig_registers_and_runs_ready_pods(
    api: APIServerProcess, components: list[Component], tmp_path: Path
) -> None:
    net = free_cluster_network()  # apart from other clusters' pods
    master_home = tmp_path / "master"
    components.append(
        Component(
            master_home,
            copied_kubeconfig(api, master_home),
            "master",
            "--cluster-network",
            net,
        )
    )
    node_home = tmp_path / "far"
    node = Component(
        node_home,
        copied_kubeconfig(api, node_home),
        "node",
        "--node-name",
        "far",
        "--heartbeat",
        "2",
    )
    components.append(node)

    nodes = wait_json(
        api, ["get", "nodes"], lambda d: [n["metadata"]["name"] for n in d["items"]] == ["far"]
    )
    assert nodes["items"][0]["status"]["conditions"], "the agent writes its Node's status"
    subnet = wait_json(api, ["get", "hostsubnet", "far"], lambda d: bool(d.get("subnet")))["subnet"]

    api.ok("apply", "-f", "-", input=POD.format(python=sys.executable, podserver=PODSERVER))
    pod = wait_json(api, ["get", "pod", "far-web"], ready)
    assert pod["spec"]["nodeName"] == "far"
    ip = pod["status"]["podIP"]
    assert ip.startswith(subnet.rsplit(".", 1)[0] + "."), (ip, subnet)
    with urllib.request.urlopen(f"http://{ip}:8080/healthz", timeout=5) as reply:
        assert reply.status == 200
    # Its log stays on its node (the API server reads only its own machine's logs).
    logs = [p.read_text() for p in node_home.glob("nodes/far/**/web.log")]
    assert any("podserver pod=far-web ns=default listening on" in text for text in logs), logs

    # The node's state directory holds its pods and logs, never a store.
    assert not list(node_home.glob("*.db*")), sorted(p.name for p in node_home.iterdir())
    pids = [
        rec.pid
        for f in node_home.glob("nodes/*/pods/*/*.pid")
        if (rec := read_record(f)) is not None
    ]
    assert len(pids) == 1
    assert node.stop() == 143, node.output()
    assert process_start_time(pids[0]) is None, "the pod process outlived its node"


ROUTER_OBJECTS = """\
apiVersion: v1
kind: Namespace
metadata: {{name: shop}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: shop}}
spec:
  ports: [{{name: http, port: 80, targetPort: {port}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: web, namespace: shop}}
subsets:
- addresses: [{{ip: {ip}}}]
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
def router_home() -> Iterator[Path]:
    # Short: HAProxy's internal UNIX socket path must fit in 107 bytes.
    path = Path(tempfile.mkdtemp(prefix="snk-", dir="/tmp"))
    try:
        yield path
    finally:
        kill_haproxy(path / "router-router")
        shutil.rmtree(path, ignore_errors=True)


def test_a_route_made_with_kubectl_is_served_by_a_router_with_only_a_kubeconfig(
    api: APIServerProcess, components: list[Component], router_home: Path
) -> None:
    http, https, stats = free_port(), free_port(), free_port()
    router = Component(
        router_home,
        copied_kubeconfig(api, router_home),
        "router",
        f"--http-port={http}",
        f"--https-port={https}",
        f"--stats-port={stats}",
        "--bind-address=127.0.0.1",
    )
    components.append(router)
    assert router.proc.stdout is not None
    line = router.proc.stdout.readline()
    assert "serving http" in line, line + router.output()

    with backends("web-1", port=free_port()) as pods:
        manifest = ROUTER_OBJECTS.format(port=pods[0].port, ip=pods[0].ip)
        assert "route.route.openshift.io/web created" in api.ok("apply", "-f", "-", input=manifest)
        deadline = time.monotonic() + 20
        last: object = None
        while time.monotonic() < deadline:
            try:
                reply = request(http, "shop.example.com")
                if reply.status == 200:
                    break
                last = reply.status
            except OSError as err:
                last = err
            time.sleep(0.1)
        else:
            raise AssertionError(f"the route was not served: {last!r}")
        assert reply.backend == "web-1"

        route = wait_json(
            api,
            ["get", "route", "web", "-n", "shop"],
            lambda d: bool((d.get("status") or {}).get("ingress")),
        )
        ingress = route["status"]["ingress"][0]
        assert ingress["routerName"] == "router"
        assert ingress["host"] == "shop.example.com"
        assert {"type": "Admitted", "status": "True"}.items() <= ingress["conditions"][0].items()

    assert router.stop() == 143, router.output()
    assert not list(router_home.glob("*.db*"))
