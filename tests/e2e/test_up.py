"""``shiftnet up`` as a user runs it: a subprocess, the demo, curl, then Ctrl-C.

The demo directory is copied elsewhere first, so the test also shows that pod
commands work from any checkout directory (``shiftnet.io/workdir: "."``).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dns.message
import dns.query
import pytest
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network
from tests.support.scrape import scrape

from shiftnet.sdn.pidfiles import process_start_time, read_record

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
SHIFTNET = Path(sys.executable).parent / "shiftnet"


class UpProcess:
    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(SHIFTNET), *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # so the test can signal it like a terminal would
        )
        self.lines: list[str] = []

    def read_until(self, pattern: str, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines))

    def rest(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.read()


def routed_2xx(metrics_url: str, http_port: str, timeout: float = 20) -> float:
    """The router's 2xx count for the seed route, right after a request through it.

    HAProxy's counters start again at each reload (as OpenShift's router's do),
    and the demo's routes may still reload it: ask again until one read follows
    its request without a reload between."""
    deadline = time.monotonic() + timeout
    while True:
        through_router(http_port, "www.example.com", "/hello")
        routed = scrape(metrics_url).matching(
            "haproxy_backend_http_responses_total", namespace="mynamespace", code="2xx"
        )
        count = max((v for _, v in routed), default=0.0)
        if count >= 1 or time.monotonic() > deadline:
            return count
        time.sleep(0.5)


def through_router(port: str, host: str, path: str, timeout: float = 30) -> str:
    """GET through the router (retrying while it loads the route), the body of the 200."""
    deadline = time.monotonic() + timeout
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=5)
        try:
            conn.request("GET", path, headers={"Host": host})
            resp = conn.getresponse()
            body = resp.read().decode()
            if resp.status == 200:
                return body
        except OSError:
            pass
        finally:
            conn.close()
        if time.monotonic() > deadline:
            raise AssertionError(f"no 200 for {host}{path} through the router")
        time.sleep(0.2)


def haproxy_pids(state: Path) -> list[int]:
    """HAProxy processes whose command line names this state directory."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "haproxy" in cmd.split(" ")[0] and str(state) in cmd:
            out.append(int(proc.name))
    return out


def pod_pids(state: Path) -> list[int]:
    pids = []
    for f in state.glob("nodes/*/pods/*/*.pid"):
        rec = read_record(f)
        if rec is not None:
            pids.append(rec.pid)
    return pids


def test_up_runs_the_demo_and_ctrl_c_leaves_nothing(
    demo_copy: Path, up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, env = up_env
    net = free_cluster_network()  # apart from other tests' pods
    up = UpProcess(
        ["up", "-f", str(demo_copy), "--node-name", "e2e", "--cluster-network", net],
        cwd=tmp_path,  # not the repository, not the demo directory
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        out = "\n".join(up.lines)
        for comp in ("store", "master", "proxy", "dns", "node", "router", "api"):
            assert f"starting {comp}" in out, out
        assert "pod/hello-1 created" in out
        assert "route.route.openshift.io/test created" in out
        assert "not ready after" not in out, out
        curls = re.findall(r"curl (http://[0-9.]+:\d+/\S*)\s+# (\S+)", out)
        assert len(curls) == 7, out
        for url, who in curls:
            ns, name = who.split("/")
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                url, timeout=10
            ) as resp:
                body = resp.read().decode()
            assert f"pod={name} ns={ns}" in body
        # Kuryr's example route, mynamespace/test, answers through the router, from its pod.
        http_port = env["ROUTER_SERVICE_HTTP_PORT"]
        body = through_router(http_port, "www.example.com", "/hello")
        assert "ns=mynamespace" in body, body
        # The demo's header actions reach the pod (examples/demo/50-headers.yaml).
        body = through_router(http_port, "headers.demo.example.com", "/")
        assert "greeting='hello via headers.demo.example.com'" in body, body
        # The demo's Ingress is served through the Route made for it (60-ingress.yaml).
        body = through_router(http_port, "ingress.demo.example.com", "/from-ingress")
        assert "ns=demo" in body and "path=/from-ingress" in body, body
        # The cluster DNS names the route's service.
        dns_host, dns_port = env["SHIFTNET_DNS_LISTEN"].split(":")
        answer = dns.query.udp(
            dns.message.make_query("s1.mynamespace.svc.cluster.local", "A"),
            dns_host,
            port=int(dns_port),
            timeout=5,
        )
        assert answer.answer and str(answer.answer[0][0]).startswith("127."), answer
        # Every component serves its series on loopback and said where when it was ready.
        urls = dict(
            re.findall(r"(\w+)\s+ready: .*; metrics on (http://127\.0\.0\.1:\d+/metrics)", out)
        )
        assert set(urls) == {"master", "proxy", "dns", "node", "router", "api"}, out
        assert routed_2xx(urls["router"], http_port) >= 1
        assert (scrape(urls["dns"]).value("coredns_dns_responses_total", rcode="NOERROR") or 0) >= 1
        assert scrape(urls["proxy"]).value("kubeproxy_sync_proxy_rules_last_timestamp_seconds")
        assert scrape(urls["master"]).value("shiftnet_master_cluster_ips_allocated")
        # ... and the user-space proxy serves that ClusterIP from the service's pods.
        cluster_ip = str(answer.answer[0][0])
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"http://{cluster_ip}:80/via-service", timeout=10
        ) as resp:
            assert "ns=mynamespace" in resp.read().decode()
        # Another shell sees the same cluster.
        got = subprocess.run(
            [str(SHIFTNET), "get", "pods", "-A", "-o", "wide"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert got.returncode == 0, got.stderr
        assert re.search(r"demo\s+hello-2\s+1/1\s+Running", got.stdout), got.stdout
        logs = subprocess.run(
            [str(SHIFTNET), "logs", "hello-1", "-n", "demo"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "podserver pod=hello-1 ns=demo listening on" in logs.stdout, logs.stderr
        # The router's access log names the route and server of the request made above.
        assert "shiftnet logs router -f" in out, out
        access = subprocess.run(
            [str(SHIFTNET), "logs", "router"], env=env, capture_output=True, text=True, timeout=30
        )
        assert access.returncode == 0, access.stderr
        assert re.search(
            r" route=mynamespace:test backend=\S+ server=s\d+ status=200 .*\"GET /hello ",
            access.stdout,
        ), access.stdout
        # kubectl, with the kubeconfig `up` printed, sees the same pods and their logs.
        assert f"export KUBECONFIG={state / 'kubeconfig'}" in out, out
        kube_env = dict(env, KUBECONFIG=str(state / "kubeconfig"), HOME=str(tmp_path))
        kubectl = ["/usr/bin/kubectl"]
        pod_lists = {"verb": "LIST", "resource": "pods", "scope": "cluster", "code": "200"}
        lists_before = scrape(urls["api"]).value("apiserver_request_total", **pod_lists) or 0
        got = subprocess.run(
            [*kubectl, "get", "pods", "-A"],
            env=kube_env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert re.search(r"demo\s+hello-2\s+1/1\s+Running", got.stdout), got.stdout + got.stderr
        # ... and the API server counted that one list under kube-apiserver's name.
        lists_after = scrape(urls["api"]).value("apiserver_request_total", **pod_lists)
        assert lists_after == lists_before + 1
        logs = subprocess.run(
            [*kubectl, "logs", "hello-1", "-n", "demo", "--tail=5"],
            env=kube_env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "podserver pod=hello-1 ns=demo listening on" in logs.stdout, logs.stderr

        def kubectl_run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*kubectl, *args], env=kube_env, input=stdin, capture_output=True, text=True,
                timeout=30,
            )  # fmt: skip

        # The router answers on loopback, so the Ingress's status names it "localhost".
        ingresses = kubectl_run("get", "ingress", "-n", "demo")
        assert re.search(r"\slocalhost\s+80\s", ingresses.stdout), ingresses.stdout
        resources = kubectl_run("api-resources")
        assert re.search(
            r"^routes\s+route\.openshift\.io/v1\s+true\s+Route$", resources.stdout, re.M
        )
        # A Route made with kubectl apply is served by this cluster's router.
        route = (
            "apiVersion: route.openshift.io/v1\nkind: Route\n"
            "metadata: {name: by-kubectl, namespace: demo}\n"
            "spec: {host: kubectl.demo.example.com, to: {kind: Service, name: hello}}\n"
        )
        made = kubectl_run("apply", "-f", "-", stdin=route)
        assert made.stdout.strip() == "route.route.openshift.io/by-kubectl created", made.stderr
        again = kubectl_run("apply", "-f", "-", stdin=route)
        assert again.stdout.strip() == "route.route.openshift.io/by-kubectl unchanged"
        assert "ns=demo" in through_router(http_port, "kubectl.demo.example.com", "/")
        # ... and one the router could not serve is refused naming its field, writing nothing.
        bad = route.replace("by-kubectl", "bad").replace(
            "to: {kind: Service, name: hello}",
            "path: /x, tls: {termination: passthrough}, to: {kind: Service, name: hello}",
        )
        refused = kubectl_run("apply", "-f", "-", stdin=bad)
        assert refused.returncode != 0 and "spec.path" in refused.stderr, refused.stderr
        assert "bad" not in kubectl_run("get", "routes", "-n", "demo", "-o", "name").stdout
        pids = pod_pids(state)
        assert len(pids) == 7
        starts = {pid: process_start_time(pid) for pid in pids}
        assert all(starts.values())

        assert haproxy_pids(state), "the router's HAProxy is not running"
        os.killpg(up.proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        code = up.proc.wait(timeout=60)
        tail = up.rest()
        assert code == 0, tail
        assert "stopped:" in tail
        for pid, start in starts.items():
            assert process_start_time(pid) != start, f"pod process {pid} survived shutdown"
        assert not pod_pids(state)
        # HAProxy (its own session, so it outlives a crashed router) stops on a clean exit.
        assert not haproxy_pids(state), "haproxy outlived shiftnet up"
        # Nothing else of the up process group lingers either.
        with pytest.raises(ProcessLookupError):
            os.killpg(up.proc.pid, 0)
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy (own sessions), by pid


def test_second_up_on_the_same_state_dir_is_refused(
    up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _state, env = up_env
    first = UpProcess(["up", "--node-name", "e2e-lock"], cwd=tmp_path, env=env)
    try:
        first.read_until(r"Press Ctrl-C", timeout=60)
        second = subprocess.run(
            [str(SHIFTNET), "up", "--node-name", "e2e-lock"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1
        assert 'another "shiftnet up"' in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        os.killpg(first.proc.pid, signal.SIGTERM)
        assert first.proc.wait(timeout=60) == 0


def test_bad_manifest_is_one_sentence_and_starts_nothing(
    up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, env = up_env
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {bogus: 1}\n")
    res = subprocess.run(
        [str(SHIFTNET), "up", "-f", str(bad)], env=env, capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 1
    assert res.stderr.startswith("error: ") and "bogus" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (state / "state.db").exists()


def test_bad_metrics_address_is_one_sentence_and_starts_nothing(
    up_env: tuple[Path, dict[str, str]],
) -> None:
    state, env = up_env
    res = subprocess.run(
        [str(SHIFTNET), "up", "--metrics-listen", "everywhere"],
        env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert res.returncode == 1
    assert res.stderr.strip() == (
        "error: --metrics-listen='everywhere' is invalid: must be an IP address or 'off'"
    )
    assert not (state / "state.db").exists()


def test_impatient_second_ctrl_c_still_stops_every_pod(
    demo_copy: Path, up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, env = up_env
    net = free_cluster_network()
    up = UpProcess(
        ["up", "-f", str(demo_copy), "--node-name", "e2e-twice", "--cluster-network", net],
        cwd=tmp_path,
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        starts = {pid: process_start_time(pid) for pid in pod_pids(state)}
        assert len(starts) == 7 and haproxy_pids(state)
        os.killpg(up.proc.pid, signal.SIGINT)
        up.read_until(r"shutting down", timeout=30)
        os.killpg(up.proc.pid, signal.SIGINT)  # while it is stopping
        up.proc.wait(timeout=60)
        for pid, start in starts.items():
            assert process_start_time(pid) != start, f"pod process {pid} survived"
        assert not haproxy_pids(state), "haproxy survived"
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy (own sessions), by pid
