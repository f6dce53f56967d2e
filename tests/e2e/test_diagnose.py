"""``shiftnet diagnose`` on a real ``shiftnet up``: a healthy route and service pass, then one
broken condition at a time is named first, with its fix.

The cluster is the user's: ``shiftnet up`` with its router, proxy, DNS and pods on
private loopback networks and free high ports; the breaks are made as a user makes
them (``shiftnet apply`` of routes, services and pods), never by editing shiftnet's files.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_up import SHIFTNET, UpProcess
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network, free_port

from shiftnet.router.haproxy.process import socket_dir

# Route hosts live under .invalid (RFC 2606): no resolver anywhere answers them, so the
# healthy checks pass only through --resolve, as curl's users do.

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]

MANIFESTS = """\
apiVersion: v1
kind: Namespace
metadata: {name: diag}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: diag
  labels: {app: web}
  annotations: {shiftnet.io/workdir: "."}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: web
      command: ["python3", "podserver.py"]
      ports: [{name: web, containerPort: 8080}]
      readinessProbe:
        httpGet: {path: /healthz, port: web}
        periodSeconds: 1
        failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: diag}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: web}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web, namespace: diag}
spec:
  host: web.diag.invalid
  to: {kind: Service, name: web}
"""


class Cluster:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd
        self.http_port = int(env["ROUTER_SERVICE_HTTP_PORT"])

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SHIFTNET), *args],
            env=self.env,
            cwd=self.cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def apply(self, text: str) -> None:
        res = self.run("apply", "-f", "-", stdin=text)
        assert res.returncode == 0, res.stderr

    def diagnose(self, *args: str) -> tuple[int, dict[str, object]]:
        res = self.run("diagnose", *args, "--json")
        assert "Traceback" not in res.stderr, res.stderr
        assert res.stdout, res.stderr
        return res.returncode, json.loads(res.stdout)

    def first_failure(
        self, *args: str, number: int, needle: str, timeout: float = 40
    ) -> dict[str, object]:
        """Diagnose until the first failed check is ``number`` and says ``needle``."""
        deadline = time.monotonic() + timeout
        while True:
            code, report = self.diagnose(*args)
            checks = report["checks"]
            assert isinstance(checks, list)
            failed = [c for c in checks if not c["ok"]]
            if failed and failed[0]["number"] == number and needle in failed[0]["found"]:
                assert code == 1
                return dict(failed[0])
            if time.monotonic() > deadline:
                raise AssertionError(json.dumps(report, indent=1))
            time.sleep(0.5)

    def passes(self, *args: str, timeout: float = 40) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        while True:
            code, report = self.diagnose(*args)
            if code == 0:
                assert report["ok"] is True
                return report
            if time.monotonic() > deadline:
                raise AssertionError(json.dumps(report, indent=1))
            time.sleep(0.5)


@contextlib.contextmanager
def running_cluster(tmp: Path, extra_env: dict[str, str]) -> Iterator[Cluster]:
    """A ``shiftnet up`` of MANIFESTS on free ports, stopped (with every pod) at the end."""
    state = tmp / "state"
    manifests = tmp / "manifests"
    manifests.mkdir()
    shutil.copy(REPO / "examples" / "demo" / "podserver.py", manifests / "podserver.py")
    (manifests / "00-web.yaml").write_text(MANIFESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(state)
    env["SHIFTNET_CLUSTERS_DIR"] = str(tmp / "clusters")
    env["ROUTER_SERVICE_HTTP_PORT"] = str(free_port())
    env["ROUTER_SERVICE_HTTPS_PORT"] = str(free_port())
    env["STATS_PORT"] = str(free_port())
    env["SHIFTNET_DNS_LISTEN"] = f"127.0.0.1:{free_port()}"
    env["SHIFTNET_API_LISTEN"] = f"127.0.0.1:{free_port()}"
    env.update(extra_env)
    net = free_cluster_network()
    up = UpProcess(
        ["up", "-f", str(manifests), "--node-name", "diag", "--cluster-network", net],
        cwd=manifests,
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        yield Cluster(env, manifests)
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy (own sessions), by pid


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("diagnose"), {}) as c:
        yield c


def resolve(c: Cluster, host: str) -> str:
    return f"{host}:{c.http_port}:127.0.0.1"


def test_healthy_route_and_service_pass(cluster: Cluster) -> None:
    host = "web.diag.invalid"
    report = cluster.passes("route", "web", "-n", "diag", "--resolve", resolve(cluster, host))
    checks = report["checks"]
    assert isinstance(checks, list) and len(checks) == 8
    assert "admitted by router `router`" in checks[3]["found"]
    # HAProxy's running map says so (through a spare until the router's owed reload).
    assert "be_http:diag:web" in checks[5]["found"]
    assert "answered 200" in checks[7]["found"]
    # Who answered, from this request's own line in the router's access log.
    served = (
        r"answered 200 \(backend (be_http:diag:web|be_spare_http:\d+) server s\d+ "
        r"\(pod `web-1` at 127\.[\d.]+:8080\)\)"
    )
    assert re.search(served, str(checks[7]["found"])), checks[7]
    # The same route found from a URL, the way the router's lookup finds it.
    url = f"http://{host}:{cluster.http_port}/some/path"
    report = cluster.passes(url, "--resolve", resolve(cluster, host))
    assert "route diag/web" in str(report["subject"])
    # Text output: one line per check, exit 0.
    text = cluster.run("diagnose", url, "--resolve", resolve(cluster, host))
    assert text.returncode == 0, text.stdout
    assert len([ln for ln in text.stdout.splitlines() if ln.startswith("✓")]) == 8
    report = cluster.passes("service", "web", "-n", "diag")
    assert "userspace mode" in json.dumps(report)


def test_wrong_port_is_check_1(cluster: Cluster) -> None:
    wrong = free_port()
    failure = cluster.first_failure(
        f"http://web.diag.invalid:{wrong}/",
        "--resolve",
        f"web.diag.invalid:{wrong}:127.0.0.1",
        number=1,
        needle=f"goes to port {wrong}",
    )
    assert f"use http://web.diag.invalid:{cluster.http_port}/" in str(failure["fix"])


def test_unresolvable_host_is_check_2(cluster: Cluster) -> None:
    failure = cluster.first_failure(
        "route", "web", "-n", "diag", number=2, needle="has no address for web.diag.invalid"
    )
    assert f"--resolve web.diag.invalid:{cluster.http_port}:127.0.0.1" in str(failure["fix"])


def test_host_claimed_by_older_route_is_check_4(cluster: Cluster) -> None:
    cluster.apply(
        "apiVersion: route.openshift.io/v1\nkind: Route\n"
        "metadata: {name: web-copy, namespace: diag}\n"
        "spec: {host: web.diag.invalid, to: {kind: Service, name: web}}\n"
    )
    host = "web.diag.invalid"
    failure = cluster.first_failure(
        "route",
        "web-copy",
        "-n",
        "diag",
        "--resolve",
        resolve(cluster, host),
        number=4,
        needle="not admitted by router `router`: HostAlreadyClaimed",
    )
    assert '"diag/web"' in str(failure["found"]) and "older" in str(failure["found"])


def test_all_pods_unready_is_check_7(cluster: Cluster) -> None:
    # A pod whose readiness probe asks a port nothing listens on never becomes ready.
    cluster.apply(
        "apiVersion: v1\nkind: Pod\n"
        "metadata: {name: sick-1, namespace: diag, labels: {app: sick}, "
        "annotations: {shiftnet.io/workdir: '.'}}\n"
        "spec:\n  terminationGracePeriodSeconds: 1\n  containers:\n"
        "    - name: web\n      command: [python3, podserver.py]\n"
        "      ports: [{name: web, containerPort: 8080}]\n"
        "      readinessProbe: {httpGet: {path: /healthz, port: 9}, periodSeconds: 1}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: sick, namespace: diag}\n"
        "spec: {selector: {app: sick}, ports: [{port: 80, targetPort: web}]}\n"
        "---\napiVersion: route.openshift.io/v1\nkind: Route\n"
        "metadata: {name: sick, namespace: diag}\n"
        "spec: {host: sick.diag.invalid, to: {kind: Service, name: sick}}\n"
    )
    host = "sick.diag.invalid"
    failure = cluster.first_failure(
        "route",
        "sick",
        "-n",
        "diag",
        "--resolve",
        resolve(cluster, host),
        number=7,
        needle="0 of 1 pods pass their readiness probe: pod `sick-1`",
        timeout=60,
    )
    assert "readinessProbe" in str(failure["fix"])
    # The node agent's Unhealthy Event gives the probe's own words.
    assert "pod `sick-1` last probe: " in str(failure["fix"]), failure
    svc = cluster.first_failure("service", "sick", "-n", "diag", number=2, needle="0 of 1 pods")
    assert "sick-1" in str(svc["found"])


def test_pod_refusing_connections_is_check_7(cluster: Cluster) -> None:
    # Ready (no probe), but the Service sends to a port the pod does not listen on.
    cluster.apply(
        "apiVersion: v1\nkind: Pod\n"
        "metadata: {name: deaf-1, namespace: diag, labels: {app: deaf}, "
        "annotations: {shiftnet.io/workdir: '.'}}\n"
        "spec:\n  terminationGracePeriodSeconds: 1\n  containers:\n"
        "    - {name: web, command: [python3, podserver.py], ports: [{containerPort: 8080}]}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: deaf, namespace: diag}\n"
        "spec: {selector: {app: deaf}, ports: [{port: 80, targetPort: 9}]}\n"
        "---\napiVersion: route.openshift.io/v1\nkind: Route\n"
        "metadata: {name: deaf, namespace: diag}\n"
        "spec: {host: deaf.diag.invalid, to: {kind: Service, name: deaf}}\n"
    )
    host = "deaf.diag.invalid"
    failure = cluster.first_failure(
        "route",
        "deaf",
        "-n",
        "diag",
        "--resolve",
        resolve(cluster, host),
        number=7,
        needle="0 of 1 ready endpoints accept connections: pod `deaf-1`",
        timeout=60,
    )
    assert "connection refused" in str(failure["found"])
    assert "targetPort" in str(failure["fix"])


def test_haproxy_held_on_an_old_configuration_is_check_6(cluster: Cluster) -> None:
    # HAProxy's master stopped (SIGSTOP) cannot reload: a new route is served at run time
    # through a spare backend, and the reload it owes waits. --reload-owed-after 1 judges
    # the wait after 1 s instead of 60 (the router, finding the master mute, restarts it
    # within seconds: that is the window).
    work = Path(cluster.env["SHIFTNET_HOME"]) / "router-router"
    pid = int((socket_dir(work) / "haproxy.pid").read_text().split()[0])
    host = "held.diag.invalid"
    args = ("route", "held", "-n", "diag", "--resolve", resolve(cluster, host))
    os.kill(pid, signal.SIGSTOP)
    try:
        cluster.apply(
            "apiVersion: route.openshift.io/v1\nkind: Route\n"
            "metadata: {name: held, namespace: diag}\n"
            f"spec: {{host: {host}, to: {{kind: Service, name: web}}}}\n"
        )
        failure = cluster.first_failure(
            *args, "--reload-owed-after", "1", number=6, needle="reload owed since", timeout=20
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    # HAProxy's show info names the configuration it loaded, older than the rendered one.
    assert re.fullmatch(
        r"HAProxy runs configuration [0-9a-f]{12} but the rendered one is [0-9a-f]{12}: "
        r"reload owed since \d+ s",
        str(failure["found"]),
    ), failure
    assert f"master (pid {pid}) is stopped" in str(failure["fix"])
    assert f"`kill -CONT {pid}`" in str(failure["fix"])
    # Served all along (through the spare), and once reloaded every check passes.
    report = cluster.passes(*args, "--reload-owed-after", "1", timeout=60)
    assert "answered 200" in str(report["checks"][7]["found"])  # type: ignore[index]


def test_haproxy_not_running_the_rendered_configuration_is_check_6(cluster: Cluster) -> None:
    # Route web's map entry and backend stay as they are; another route's timeout annotation
    # changes its backend, which the runtime API cannot do: the router renders it and
    # reloads. With HAProxy's master stopped (SIGSTOP) the reload waits until the router
    # finds the master mute and starts a new one (seconds): meanwhile HAProxy's show info
    # names the configuration it loaded, and haproxy.cfg on disk has another digest.
    work = Path(cluster.env["SHIFTNET_HOME"]) / "router-router"
    config = work / "conf" / "haproxy.cfg"
    host = "web.diag.invalid"
    args = ("route", "web", "-n", "diag", "--resolve", resolve(cluster, host))
    other = (
        "apiVersion: route.openshift.io/v1\nkind: Route\n"
        "metadata: {name: other, namespace: diag%s}\n"
        "spec: {host: other.diag.invalid, to: {kind: Service, name: web}}\n"
    )
    cluster.apply(other % "")
    cluster.passes(
        "route", "other", "-n", "diag", "--resolve", resolve(cluster, "other.diag.invalid")
    )
    cluster.passes(*args)
    pid = int((socket_dir(work) / "haproxy.pid").read_text().split()[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        cluster.apply(other % ", annotations: {haproxy.router.openshift.io/timeout: 7s}")
        deadline = time.monotonic() + 30
        while b"timeout server 7s" not in config.read_bytes():
            assert time.monotonic() < deadline, "the router did not render the annotation"
            time.sleep(0.05)
        failure = cluster.first_failure(*args, number=6, needle="HAProxy runs configuration")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert re.fullmatch(
        r"HAProxy runs configuration [0-9a-f]{12} but the rendered one is [0-9a-f]{12}: "
        r"reload owed since \d+ s",
        str(failure["found"]),
    ), failure
    assert f"`kill -CONT {pid}`" in str(failure["fix"])
    report = cluster.passes(*args, timeout=60)
    found = str(report["checks"][5]["found"])  # type: ignore[index]
    digest = re.search(rb"description config-sha256:([0-9a-f]{12})", config.read_bytes())
    assert digest is not None and f"configuration {digest[1].decode()}" in found, found


def test_route_outside_every_shard_is_check_4(tmp_path: Path) -> None:
    # The cluster's only router serves routes labelled shard=main (ROUTE_LABELS).
    with running_cluster(tmp_path, {"ROUTE_LABELS": "shard=main"}) as sharded:
        sharded.apply(
            "apiVersion: route.openshift.io/v1\nkind: Route\n"
            "metadata: {name: inside, namespace: diag, labels: {shard: main}}\n"
            "spec: {host: inside.diag.invalid, to: {kind: Service, name: web}}\n"
        )
        report = sharded.passes(
            "route", "inside", "-n", "diag", "--resolve", resolve(sharded, "inside.diag.invalid")
        )
        assert (
            "admitted by router `router` on host inside.diag.invalid; the shard of `router` "
            "(ROUTE_LABELS `shard=main`) selects it"
        ) in json.dumps(report)
        # The router's shard, from its run/shard.json, evaluated against the route's labels.
        failure = sharded.first_failure(
            "route",
            "web",
            "-n",
            "diag",
            "--resolve",
            resolve(sharded, "web.diag.invalid"),
            number=4,
            needle="no router's shard selects route diag/web (route labels: none;",
        )
        assert "router `router` serves ROUTE_LABELS `shard=main`" in str(failure["found"])
        assert "route label shard=main (router `router`)" in str(failure["fix"])


def test_access_log_to_syslog_says_where_it_goes(tmp_path: Path) -> None:
    # HAProxy logs to a syslog address: the router keeps no file, so check 8 cannot name the
    # server and says where the log goes instead (the request itself still passes).
    syslog = f"udp@127.0.0.1:{free_port()}"
    with running_cluster(tmp_path, {"ROUTER_SYSLOG_ADDRESS": syslog}) as c:
        report = c.passes("route", "web", "-n", "diag", "--resolve", resolve(c, "web.diag.invalid"))
        checks = report["checks"]
        assert isinstance(checks, list)
        found = str(checks[7]["found"])
        assert found.endswith(
            f"answered 200 (backend and server not known: the access log goes to syslog {syslog})"
        ), found


def test_bad_input_is_one_sentence(cluster: Cluster) -> None:
    for args, needle in [
        (("ftp://x",), "URL 'ftp://x' is invalid"),
        (("http://[::1",), "URL 'http://[::1' is invalid"),
        (("http://nothing.diag.invalid/",), "no route serves host nothing.diag.invalid"),
        (("route", "nope", "-n", "diag"), 'routes "nope" not found'),
        (("service", "nope", "-n", "diag"), 'services "nope" not found'),
        (("route", "web", "-n", "diag", "--resolve", "bad"), "--resolve 'bad' is invalid"),
    ]:
        res = cluster.run("diagnose", *args)
        assert res.returncode == 1 and res.stdout == "", (args, res.stdout)
        assert res.stderr.startswith("error: ") and needle in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
