"""A pod of the demo resolves names through its own resolver settings.

``shiftnet up -f examples/demo`` runs inside a network namespace this test
creates, with the cluster DNS on port 53 there (never the host's port 53).
A pod applied into ``demo`` looks names up with the system resolver (glibc's
``getaddrinfo`` and ``getent hosts``) and prints what it got: the Service by its
short name (search path), by ``hello.demo``, a pod record, the ExternalName
Service ``greeter.mynamespace``, its own hostname and FQDN and a hostAlias
from its hosts file, and its resolv.conf.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a network namespace"),
    pytest.mark.timeout(240),
]

REPO = Path(__file__).resolve().parents[2]
SHIFTNET = Path(sys.executable).parent / "shiftnet"

LOOKUPS = r"""
import json, socket, subprocess
def addrs(name):
    try:
        return sorted({a[4][0] for a in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)})
    except socket.gaierror as exc:
        return "error: " + str(exc)
def getent(name):
    r = subprocess.run(["getent", "hosts", name], capture_output=True, text=True)
    return r.stdout.split()
out = {n: addrs(n) for n in NAMES}
own = ("hello", "web-0.lookup.demo.svc.cluster.local", "foo.local")
out["getent"] = {n: getent(n) for n in own}
out["hostname"] = socket.gethostname()
out["resolv"] = open("/etc/resolv.conf").read()
print("RESULT " + json.dumps(out), flush=True)
"""


def _lookup_pod(names: list[str]) -> dict[str, object]:
    code = f"NAMES = {names!r}\n" + LOOKUPS
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lookup", "namespace": "demo"},
        "spec": {
            "restartPolicy": "Never",
            "hostname": "web-0",
            "subdomain": "lookup",
            "hostAliases": [{"ip": "127.0.0.77", "hostnames": ["foo.local"]}],
            "dnsConfig": {"options": [{"name": "timeout", "value": "2"}]},
            "containers": [{"name": "q", "command": ["python3", "-c", code]}],
        },
    }


def _sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"sn-e2e-dns-{uuid.uuid4().hex[:6]}"
    _sh("ip", "netns", "add", name)
    try:
        _sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield name
    finally:
        for pid in _sh("ip", "netns", "pids", name).split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_demo_pod_resolves_through_its_own_settings(netns: str, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", demo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env.update(
        SHIFTNET_HOME=str(tmp_path / "state"),
        SHIFTNET_CLUSTERS_DIR=str(tmp_path / "clusters"),
        # port 53 of the namespace's own loopback: glibc can only ask port 53
        SHIFTNET_DNS_LISTEN="127.0.0.1:53",
        ROUTER_SERVICE_HTTP_PORT="10080",
        ROUTER_SERVICE_HTTPS_PORT="10443",
        STATS_PORT="11936",
        SHIFTNET_API_LISTEN="127.0.0.1:16443",
    )
    up = subprocess.Popen(
        ["ip", "netns", "exec", netns, str(SHIFTNET), "up", "-f", str(demo)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            line = up.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip())
            if "Press Ctrl-C" in line:
                break
        assert any("Press Ctrl-C" in x for x in lines), "\n".join(lines)

        def shiftnet(*args: str, stdin: str | None = None) -> str:
            return subprocess.run(
                ["ip", "netns", "exec", netns, str(SHIFTNET), *args],
                env=env,
                input=stdin,
                capture_output=True,
                text=True,
                check=True,
            ).stdout

        hello_ip = json.loads(shiftnet("get", "service", "hello", "-n", "demo", "-o", "json"))[
            "spec"
        ]["clusterIP"]
        pod_ip = json.loads(shiftnet("get", "pod", "hello-1", "-n", "demo", "-o", "json"))[
            "status"
        ]["podIP"]
        pod_record = pod_ip.replace(".", "-") + ".demo.pod.cluster.local"
        names = ["hello", "hello.demo", pod_record, "greeter.mynamespace"]
        shiftnet("apply", "-f", "-", stdin=json.dumps(_lookup_pod(names)))
        result: dict[str, object] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not result:
            log = shiftnet("logs", "lookup", "-n", "demo")
            for line in log.splitlines():
                if line.startswith("RESULT "):
                    result = json.loads(line[len("RESULT ") :])
            time.sleep(0.3)
        assert result, log
        lookup_ip = json.loads(shiftnet("get", "pod", "lookup", "-n", "demo", "-o", "json"))[
            "status"
        ]["podIP"]
    finally:
        os.killpg(up.pid, signal.SIGINT)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait(timeout=10)
    assert up.returncode == 0, "\n".join(lines)
    assert result["hello"] == [hello_ip], result
    assert result["hello.demo"] == [hello_ip], result
    assert result[pod_record] == [pod_ip], result
    assert result["greeter.mynamespace"] == [hello_ip], result
    getent = result["getent"]
    assert isinstance(getent, dict)
    assert getent["hello"][0] == hello_ip
    assert getent["web-0.lookup.demo.svc.cluster.local"] == [
        lookup_ip,
        "web-0.lookup.demo.svc.cluster.local",
        "web-0",
    ]
    assert getent["foo.local"] == ["127.0.0.77", "foo.local"]
    assert result["hostname"] == "web-0"
    assert result["resolv"] == (
        "search demo.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 127.0.0.1\n"
        "options ndots:5 timeout:2\n"
    )
