"""``shiftnet up`` (local mode) serves a LoadBalancer Service as a user would reach it:
the master gives it a node port and an address of the built-in loopback pool, the
user-space proxy listens on both, and ``kubectl get svc`` shows them.

The same run checks what README promises of a default ``up``: nothing listens
outside the machine (every socket of ``up``, its HAProxy and its pods is on
loopback, the node port too), and the API and the stats page want a credential."""

from __future__ import annotations

import base64
import os
import re
import signal
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.e2e.test_up import UpProcess
from tests.support.exposure import ALL_TABLES, descendants, exposed
from tests.support.kubectl import kube_env, kubectl, shiftnet_apply, wait_for
from tests.support.leftovers import pod_pids, stop_up
from tests.support.ports import free_cluster_network, free_port
from tests.support.router import haproxy_pids_using

from shiftnet.router.haproxy.held_ports import listening_sockets

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

LB_SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: hello-lb, namespace: demo}
spec:
  type: LoadBalancer
  selector: {app: hello}
  ports: [{name: web, port: 8080, targetPort: web}]
"""


def get(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as resp:
        return str(resp.read().decode())


def eventually_get(url: str, timeout: float = 30) -> str:
    return wait_for(lambda: get(url), lambda _: True, timeout, interval=0.2, retry_on=(OSError,))


def status_of(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status of a GET (a certificate is not checked: only the answer counts)."""
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}),
        urllib.request.HTTPSHandler(context=ssl._create_unverified_context()),
    )
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as err:
        return err.code


def up_processes(up: UpProcess, state: Path) -> set[int]:
    """``up`` and all below it, its HAProxy (a daemon: not its child) and its pods."""
    return descendants(up.proc.pid) | haproxy_pids_using(state) | set(pod_pids(state))


def assert_nothing_listens_beyond_loopback(
    up: UpProcess, state: Path, env: dict[str, str], node_port: int
) -> None:
    pids = up_processes(up, state)
    # read from the right processes: the router's, the DNS's and the proxy's are there
    found = {(proto, port) for proto, _, port in listening_sockets(pids, ALL_TABLES)}
    dns_port = int(env["SHIFTNET_DNS_LISTEN"].rsplit(":", 1)[1])
    for proto, port in (
        ("tcp", int(env["ROUTER_SERVICE_HTTP_PORT"])),
        ("tcp", int(env["STATS_PORT"])),
        ("udp", dns_port),
        ("tcp", node_port),
    ):
        assert (proto, port) in found, sorted(found)
    assert exposed(pids) == [], f"listening beyond loopback: {exposed(pids)}"

    api = env["SHIFTNET_API_LISTEN"]
    assert status_of(f"https://{api}/api/v1/namespaces") == 401
    stats = int(env["STATS_PORT"])
    assert status_of(f"http://127.0.0.1:{stats}/") == 401
    printed = re.search(r"router stats: \S+ user (\S+) password (\S+)", "\n".join(up.lines))
    assert printed, "\n".join(up.lines)
    token = base64.b64encode(f"{printed[1]}:{printed[2]}".encode()).decode()
    assert status_of(f"http://127.0.0.1:{stats}/", {"Authorization": f"Basic {token}"}) == 200


def closed(url: str) -> bool:
    """Whether nothing answers at ``url`` any more."""
    try:
        get(url)
    except OSError:
        return True
    return False


def test_load_balancer_service_on_the_local_pool_and_a_node_port(
    demo_copy: Path,
    up_env: tuple[Path, dict[str, str]],
    tmp_path: Path,
) -> None:
    state, env = up_env
    node_port = free_port()
    env["SHIFTNET_SERVICE_NODE_PORT_RANGE"] = f"{node_port}-{node_port}"  # a free high port
    net = free_cluster_network()  # apart from other clusters' pods
    up = UpProcess(
        ["up", "-f", str(demo_copy), "--node-name", "e2e", "--cluster-network", net],
        cwd=tmp_path,
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        shiftnet_apply(env, LB_SERVICE)
        kenv = kube_env(env, tmp_path)
        row = wait_for(
            lambda: kubectl(kenv, "get", "svc", "hello-lb", "-n", "demo", "--no-headers").stdout,
            lambda shown: bool(re.search(r"127\.\d+\.0\.\d+\s+8080:\d+/TCP", shown)),
        )
        match = re.search(r"LoadBalancer\s+\S+\s+(127\.\d+\.0\.\d+)\s+8080:(\d+)/TCP", row)
        assert match, row
        lb_ip, shown_port = match.group(1), int(match.group(2))
        assert shown_port == node_port
        assert int(lb_ip.split(".")[1]) >= 50, lb_ip  # the pool beside the service network
        assert "pod=hello-" in eventually_get(f"http://{lb_ip}:8080/via-lb")
        assert "pod=hello-" in eventually_get(f"http://127.0.0.1:{node_port}/via-node-port")
        assert_nothing_listens_beyond_loopback(up, state, env, node_port)
        # back to ClusterIP: the node port and the address are given back and stop answering
        cluster_ip_only = LB_SERVICE.replace("type: LoadBalancer", "type: ClusterIP")
        shiftnet_apply(env, cluster_ip_only)
        # the node port stops answering after the type change
        wait_for(lambda: closed(f"http://127.0.0.1:{node_port}/"), bool)
        os.killpg(up.proc.pid, signal.SIGINT)
        assert up.proc.wait(timeout=60) == 0, up.rest()
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy, by pid
