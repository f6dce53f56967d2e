"""A local-mode pod started without root reaches the cluster DNS on its high port.

The node agent's pod-start code (sdn/podfiles.pod_files) writes the pod's
resolv.conf and hosts and gives the wrapper (sdn/podetc.py) and environment
every container process starts with. Here that process runs as ``nobody``
against a live DNS server on 127.0.0.1:<free port>:

* where the kernel allows unprivileged user namespaces, podetc maps the user to
  itself and bind-mounts the pod's files: ``dig +search`` (which reads
  /etc/resolv.conf) finds ``hello`` through the pod's search path, asked of
  ``SHIFTNET_DNS_SERVER``; ``getent`` reads the pod's hosts; the hostname is the pod's;
* where the kernel refuses them (a user namespace of the test's own with
  ``user.max_user_namespaces`` 0), podetc says so on stderr and runs the command
  with the node's files; ``LOCALDOMAIN`` carries the search path, and a lookup
  through ``SHIFTNET_DNS_SERVER`` still resolves the service.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.support.dns import service
from tests.support.dns_cluster import Cluster, make_cluster_fixture
from tests.support.unprivileged import SYSTEM_PYTHON, can_run_as_nobody, run_as_nobody

from shiftnet.api import Pod
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.podfiles import PodFiles, pod_files

pytestmark = [
    pytest.mark.integration,
    pytest.mark.root,
    pytest.mark.skipif(not can_run_as_nobody(), reason="needs root to start a pod as nobody"),
]

POD_IP = "127.10.0.5"
HELLO_IP = "10.96.0.10"  # only data: nothing connects to it
# What the pod runs: who it is, what it sees, and lookups through SHIFTNET_DNS_SERVER.
SCRIPT = r"""
host=${SHIFTNET_DNS_SERVER%:*}; port=${SHIFTNET_DNS_SERVER##*:}
echo "uid $(id -u)"
echo "hostname $(hostname)"
echo "resolv $(md5sum < /etc/resolv.conf | cut -d' ' -f1)"
echo "hosts $(getent hosts web-0.lookup.demo.svc.cluster.local)"
echo "search $(dig +search +short +time=2 +tries=1 -p "$port" @"$host" hello)"
for d in $LOCALDOMAIN; do
  a=$(dig +short +time=2 +tries=1 -p "$port" @"$host" "hello.$d")
  if [ -n "$a" ]; then echo "localdomain $a"; break; fi
done
echo "env $SHIFTNET_DNS_SERVER $SHIFTNET_RESOLV_CONF"
"""


def pod() -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": "lookup", "namespace": "demo", "uid": "u-1"},
            "spec": {
                "hostname": "web-0",
                "subdomain": "lookup",
                "containers": [{"name": "q", "command": ["sh", "-c", SCRIPT]}],
            },
        }
    )


@pytest.fixture
async def cluster(tmp_path) -> AsyncIterator[Cluster]:  # type: ignore[no-untyped-def]
    gen = make_cluster_fixture()(tmp_path)
    c = await gen.__anext__()
    try:
        await c.client.create(service("hello", "demo", cluster_ip=HELLO_IP, ports=[{"port": 80}]))
        await c.until("hello.demo.svc.cluster.local", "A", lambda m: bool(m.answer), within=5)
        yield c
    finally:
        with pytest.raises(StopAsyncIteration):
            await gen.__anext__()


@pytest.fixture
def pod_dir() -> Iterator[Path]:
    """Outside pytest's 0700 tmp tree, so nobody can read the pod's files."""
    path = Path(tempfile.mkdtemp(prefix="sn-podetc-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def start_pod(cluster: Cluster, pod_dir: Path) -> tuple[PodFiles, list[str], dict[str, str]]:
    config = NodeConfig(node_name="n1", state_dir=pod_dir, dns_server=("127.0.0.1", cluster.port))
    files = pod_files(pod(), POD_IP, config, pod_dir)
    argv = files.wrap(["sh", "-c", SCRIPT])
    assert argv[0] == sys.executable
    argv[0] = SYSTEM_PYTHON  # podetc.py is standard library only, for any interpreter
    return files, argv, {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **files.env}


def report(stdout: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in stdout.splitlines() if " " in line)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


async def test_a_pod_of_nobody_sees_its_own_files_and_reaches_the_cluster_dns(
    cluster: Cluster, pod_dir: Path
) -> None:
    files, argv, env = start_pod(cluster, pod_dir)
    # glibc cannot name port 8053-like ports: the file keeps the node's nameservers
    assert f"SHIFTNET_DNS_SERVER=127.0.0.1:{cluster.port}" in files.texts["resolv.conf"]
    proc = await asyncio.to_thread(run_as_nobody, argv, env)  # the DNS answers meanwhile
    got = report(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert "not in place" not in proc.stderr, proc.stderr
    assert got["uid"] == "65534"
    assert got["hostname"] == "web-0"
    assert got["resolv"] == md5(pod_dir / "resolv.conf")
    assert got["hosts"].split() == [POD_IP, "web-0.lookup.demo.svc.cluster.local", "web-0"]
    assert got["search"] == HELLO_IP, proc.stdout  # the pod's search path, the DNS's port
    assert got["env"] == f"127.0.0.1:{cluster.port} {pod_dir / 'resolv.conf'}"
    assert os.uname().nodename != "web-0"  # nothing leaked back to the node


async def test_where_the_kernel_refuses_user_namespaces_the_environment_still_leads_to_the_dns(
    cluster: Cluster, pod_dir: Path
) -> None:
    _, argv, env = start_pod(cluster, pod_dir)
    proc = await asyncio.to_thread(run_as_nobody, argv, env, refuse_user_namespaces=True)
    got = report(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert "the pod's resolv.conf and hosts are not in place" in proc.stderr, proc.stderr
    assert "unshare" in proc.stderr
    assert got["uid"] == "65534"
    assert got["resolv"] == md5(Path("/etc/resolv.conf"))  # the node's, as the log says
    assert got["hosts"] == ""  # the pod's own line is only in its hosts file
    assert env["LOCALDOMAIN"].split()[0] == "demo.svc.cluster.local"
    assert got["localdomain"] == HELLO_IP, proc.stdout
    assert got["env"] == f"127.0.0.1:{cluster.port} {pod_dir / 'resolv.conf'}"
