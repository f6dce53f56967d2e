"""Two ``shiftnet up`` side by side, as kind users run clusters: each its own networks and ports.

Both clusters apply the same names (namespace ``team``, Service and Route
``web``) with a pod of their own, so any mix-up shows: each cluster's DNS must
answer with its own ClusterIP, that ClusterIP (through its user-space proxy)
and its router must reach its own pod. A third start that asks for what the
first one holds is refused in one sentence; the second cluster restarted keeps
its networks and ports. The router's HTTP/HTTPS ports are given (as root
their defaults would be the host's 80/443); the stats and DNS ports are left
to the cluster, so their per-cluster choice is exercised too.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from ipaddress import ip_address, ip_network
from pathlib import Path

import dns.message
import dns.query
import pytest
from tests.e2e.test_up import SHIFTNET, UpProcess, haproxy_pids, pod_pids, through_router
from tests.support.leftovers import stop_up
from tests.support.ports import free_port

from shiftnet.sdn.pidfiles import process_start_time

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
HOST = "web.example.test"
SERVICE = "web.team.svc.cluster.local"

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata: {{name: team}}
---
apiVersion: v1
kind: Pod
metadata:
  name: {pod}
  namespace: team
  labels: {{app: web}}
  annotations: {{shiftnet.io/workdir: "."}}
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - name: web
      command: ["python3", "podserver.py"]
      ports: [{{name: web, containerPort: 8080}}]
      readinessProbe:
        httpGet: {{path: /healthz, port: web}}
        periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: team}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: web}}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {{name: web, namespace: team}}
spec:
  host: {host}
  to: {{kind: Service, name: web}}
"""


class Cluster:
    """One ``shiftnet up`` of this test: its state directory, environment and manifests."""

    def __init__(self, root: Path, name: str, registry: Path) -> None:
        self.name = name
        self.state = root / name / "state"
        self.manifests = root / name / "manifests"
        self.manifests.mkdir(parents=True)
        shutil.copy(REPO / "examples" / "demo" / "podserver.py", self.manifests)
        (self.manifests / "team.yaml").write_text(MANIFEST.format(pod=f"pod-{name}", host=HOST))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
        self.env.update(
            SHIFTNET_HOME=str(self.state),
            SHIFTNET_CLUSTERS_DIR=str(registry),
            SHIFTNET_API_LISTEN=f"127.0.0.1:{free_port()}",  # never the host's 6443
            ROUTER_SERVICE_HTTP_PORT=str(free_port()),
            ROUTER_SERVICE_HTTPS_PORT=str(free_port()),
        )
        for var in ("STATS_PORT", "ROUTER_BIND_ADDRESS"):
            self.env.pop(var, None)
        self.up: UpProcess | None = None

    def start(self, cwd: Path) -> None:
        self.up = UpProcess(
            ["up", "-f", str(self.manifests), "--node-name", self.name], cwd, self.env
        )
        self.up.read_until(r"Press Ctrl-C", timeout=120)
        out = "\n".join(self.up.lines)
        assert "not ready after" not in out, out

    def line(self, component: str) -> str:
        """The "<component> ready: ..." line of the last start."""
        assert self.up is not None
        found = [x for x in self.up.lines if re.search(rf"^  {component} +ready:", x)]
        assert found, "\n".join(self.up.lines)
        return found[-1]

    def stop(self) -> None:
        assert self.up is not None
        starts = {pid: process_start_time(pid) for pid in pod_pids(self.state)}
        assert starts, "no pod process recorded"
        os.killpg(self.up.proc.pid, signal.SIGINT)
        assert self.up.proc.wait(timeout=60) == 0, self.up.rest()
        for pid, start in starts.items():
            assert process_start_time(pid) != start, f"pod process {pid} survived"
        assert not pod_pids(self.state)
        assert not haproxy_pids(self.state)

    def kill(self) -> None:
        if self.up is not None:
            stop_up(self.up.proc, self.state)  # and its pods and HAProxy, by pid

    def network(self, label: str) -> str:
        """The cluster or service network the master says it runs with."""
        line = self.line("master")
        match = re.search(label + r" ([0-9./]+)", line)
        assert match, line
        return match.group(1)

    def origins(self) -> set[str]:
        """How the claims step came by each value: given, kept or new."""
        return set(re.findall(r"\((new|kept|given)\)", self.line("claims")))

    def dns_address(self) -> tuple[str, int]:
        line = self.line("dns")
        match = re.search(r" on ([0-9.]+):(\d+) ", line)
        assert match, line
        return match.group(1), int(match.group(2))

    def cluster_ip(self) -> str:
        host, port = self.dns_address()
        answer = dns.query.udp(dns.message.make_query(SERVICE, "A"), host, port=port, timeout=5)
        assert answer.answer, answer
        return str(answer.answer[0][0])

    def through_cluster_ip(self, ip: str, timeout: float = 30) -> str:
        """GET through the user-space proxy, retrying while the Service's endpoints and
        listener settle (they follow the pods asynchronously, as the router does)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + timeout
        while True:
            try:
                with opener.open(f"http://{ip}:80/via-service", timeout=10) as resp:
                    return str(resp.read().decode())
            except OSError as err:
                if time.monotonic() > deadline:
                    seen = subprocess.run(
                        [str(SHIFTNET), "get", "pods,endpoints", "-A", "-o", "wide"],
                        env=self.env,
                        capture_output=True,
                        text=True,
                        timeout=30,
                    )
                    raise AssertionError(
                        f"cluster {self.name}: {ip}:80 does not answer ({err})\n{seen.stdout}"
                    ) from err
            time.sleep(0.2)

    def check_serves_its_own(self) -> str:
        """DNS -> own ClusterIP -> own pod through the proxy; the Route through own router."""
        ip = self.cluster_ip()
        assert ip_address(ip) in ip_network(self.network("service network")), (
            ip,
            self.line("master"),
        )
        body = self.through_cluster_ip(ip)
        assert f"pod=pod-{self.name} ns=team" in body, body
        pod_ip = re.search(r"ip=(\S+)", body)
        assert pod_ip and ip_address(pod_ip.group(1)) in ip_network(self.network("cluster network"))
        routed = through_router(self.env["ROUTER_SERVICE_HTTP_PORT"], HOST, "/via-route")
        assert f"pod=pod-{self.name} ns=team" in routed, routed
        return ip


def refused(env: dict[str, str], *args: str) -> str:
    """A third ``shiftnet up`` that must stop at once: its one-line error."""
    res = subprocess.run(
        [str(SHIFTNET), "up", "--node-name", "c", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


def test_two_clusters_side_by_side_and_a_restart_keeps_its_ranges(tmp_path: Path) -> None:
    registry = tmp_path / "clusters"
    a, b = Cluster(tmp_path, "a", registry), Cluster(tmp_path, "b", registry)
    try:
        a.start(tmp_path)
        b.start(tmp_path)
        ip_a, ip_b = a.check_serves_its_own(), b.check_serves_its_own()
        assert ip_a != ip_b
        for label in ("cluster network", "service network"):
            assert a.network(label) != b.network(label), (a.line("master"), b.line("master"))
        assert a.dns_address() != b.dns_address()

        # A third cluster asking for what the first one holds is refused, naming it.
        c = Cluster(tmp_path, "c", registry)
        msg = refused(c.env, "--service-network", a.network("service network"))
        assert "--service-network" in msg and str(a.state) in msg, msg
        env = dict(c.env, ROUTER_SERVICE_HTTP_PORT=a.env["ROUTER_SERVICE_HTTP_PORT"])
        msg = refused(env)
        assert a.env["ROUTER_SERVICE_HTTP_PORT"] in msg and str(a.state) in msg, msg
        assert "--http-port" in msg, msg

        # The second cluster restarted keeps its networks and ports, and serves again.
        before = (b.network("cluster network"), b.network("service network"), b.dns_address())
        b.stop()
        b.start(tmp_path)
        assert (b.network("cluster network"), b.network("service network"), b.dns_address()) == (
            before
        )
        assert b.origins() == {"kept", "given"}, b.line("claims")
        assert b.check_serves_its_own() == ip_b
        a.check_serves_its_own()

        b.stop()
        a.stop()
    finally:
        a.kill()
        b.kill()
