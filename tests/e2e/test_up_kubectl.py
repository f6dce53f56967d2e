"""The real kubectl against a running ``shiftnet up``, with the kubeconfig it wrote:
the verbs ``test_up.py`` does not drive (explain, configured, jsonpath, label
selectors, label, a stale replace, delete and NotFound, get -w), in one cluster."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.support.apiserver import KUBECTL
from tests.support.kubectl import kube_env, kubectl, kubectl_json, wait_for
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SHIFTNET = str(Path(sys.executable).with_name("shiftnet"))

ROUTE = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: NAME
  namespace: default
  labels: {app: shop, tier: TIER}
spec:
  host: HOST
  to: {kind: Service, name: shop}
"""


def route(name: str, host: str, tier: str = "front") -> str:
    return ROUTE.replace("NAME", name).replace("HOST", host).replace("TIER", tier)


def ok(env: dict[str, str], *args: str, input: str | None = None) -> str:
    res = kubectl(env, *args, input=input)
    assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
    return res.stdout


def wait_up(proc: subprocess.Popen[str], timeout: float = 120) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if "Press Ctrl-C" in line:
            return seen
    raise AssertionError("shiftnet up did not start:\n" + "\n".join(seen))


def test_kubectl_verbs_against_a_running_up(
    up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, env = up_env
    up = subprocess.Popen(
        [SHIFTNET, "up", "--node-name", "kc", "--cluster-network", free_cluster_network()],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    watcher: subprocess.Popen[str] | None = None
    try:
        out = wait_up(up)
        kube = kube_env(env, tmp_path)
        assert any(line.strip() == f"export KUBECONFIG={state}/kubeconfig" for line in out), out

        # explain reads the served OpenAPI: a nested field with its description
        explained = ok(kube, "explain", "route.spec.tls")
        assert "GROUP:      route.openshift.io" in explained, explained
        assert "FIELD: tls" in explained and "termination" in explained, explained

        # get -w: open before the changes, one line per change
        watcher = subprocess.Popen(
            [KUBECTL, "get", "routes", "-w", "-o", "name", "--request-timeout=0"],
            env=kube, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        watched: list[str] = []
        reader = threading.Thread(
            target=lambda: watched.extend(line.strip() for line in watcher.stdout or ()),
            daemon=True,
        )
        reader.start()

        # apply: created, unchanged, configured after an edit
        shop = route("shop", "shop.example.com")
        assert ok(kube, "apply", "-f", "-", input=shop).strip() == (
            "route.route.openshift.io/shop created"
        )
        assert ok(kube, "apply", "-f", "-", input=shop).strip().endswith("unchanged")
        edited = shop.replace("shop.example.com", "www.shop.example.com")
        assert ok(kube, "apply", "-f", "-", input=edited).strip() == (
            "route.route.openshift.io/shop configured"
        )
        ok(kube, "apply", "-f", "-", input=route("admin", "admin.example.com", "back"))

        # jsonpath and label selectors
        hosts = ok(kube, "get", "routes", "-o", "jsonpath={.items[*].spec.host}").split()
        assert sorted(hosts) == ["admin.example.com", "www.shop.example.com"]
        front = ok(
            kube, "get", "routes", "-l", "tier=front", "-o", "jsonpath={.items[*].metadata.name}"
        )
        assert front.split() == ["shop"]
        assert ok(kube, "get", "routes", "-l", "tier notin (front)", "-o", "name").split() == [
            "route.route.openshift.io/admin"
        ]

        # label, then a replace from before it: Conflict, nothing written
        stale = kubectl_json(kube, "get", "route", "shop")
        assert ok(kube, "label", "route", "shop", "team=blue").strip() == (
            "route.route.openshift.io/shop labeled"
        )
        assert ok(kube, "get", "routes", "-l", "team=blue", "-o", "name").split() == [
            "route.route.openshift.io/shop"
        ]
        stale["spec"]["host"] = "stale.example.com"
        conflict = kubectl(kube, "replace", "-f", "-", input=json.dumps(stale))
        assert conflict.returncode != 0
        assert "Error from server (Conflict)" in conflict.stderr, conflict.stderr
        assert "the object has been modified; please apply your changes to the latest version" in (
            conflict.stderr
        )
        now = kubectl_json(kube, "get", "route", "shop")
        assert now["spec"]["host"] == "www.shop.example.com"
        assert now["metadata"]["labels"]["team"] == "blue"

        # delete, then NotFound
        assert ok(kube, "delete", "route", "admin").strip() == (
            'route.route.openshift.io "admin" deleted'
        )
        gone = kubectl(kube, "get", "route", "admin")
        assert gone.returncode != 0
        assert (
            'Error from server (NotFound): routes.route.openshift.io "admin" not found'
            in gone.stderr
        ), gone.stderr

        # the watch saw each change: created, configured, admin created, labeled, deleted
        # (and the router's status writes), each line naming its route
        wait_for(lambda: list(watched), lambda w: w.count("route.route.openshift.io/admin") >= 2)
        assert set(watched) == {"route.route.openshift.io/shop", "route.route.openshift.io/admin"}
        assert watched.count("route.route.openshift.io/shop") >= 3, watched
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait(timeout=10)
        stop_up(up, state)
