"""The RBAC table of docs/router.md ("Against a Kubernetes API") is exactly what a
router sends: a real router over ``kube://`` against a real ``shiftnet apiserver``
whose request log (``--audit-log``) records every (verb, group, resource) it asks
for, while it admits a route, refuses one (a Warning Event) and refuses it again
(the Event folded: read and updated)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.apiserver import SHIFTNET, APIServerProcess
from tests.support.ports import free_port
from tests.support.router import kill_haproxy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

DOC = Path(__file__).resolve().parents[3] / "docs" / "router.md"

OBJECTS = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: shop}
subsets:
- addresses: [{ip: 127.0.0.9}]
  ports: [{name: http, port: 8080}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web, namespace: shop}
spec:
  host: shop.example.com
  to: {kind: Service, name: web}
"""
THIEF = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: thief, namespace: other}
spec:
  host: shop.example.com
  to: {kind: Service, name: web}
"""

Rule = tuple[str, str, str]  # verb, API group ("" for core), resource[/subresource]


def documented_rules(text: str) -> set[Rule]:
    """The rows of the RBAC table under "Against a Kubernetes API"."""
    section = text.split("## Against a Kubernetes API", 1)[1].split("\n## ", 1)[0]
    rules: set[Rule] = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row = re.fullmatch(r"`([a-z/]+)` \((?:`([a-z0-9.]+)`|core)\)", cells[0])
        if len(cells) < 2 or row is None:
            continue
        verbs = re.findall(r"`([a-z]+)`", cells[1])
        assert verbs, f"no verbs in the row {line!r}"
        rules |= {(verb, row.group(2) or "", row.group(1)) for verb in verbs}
    assert rules, "docs/router.md has no RBAC table under 'Against a Kubernetes API'"
    return rules


@pytest.fixture
def audit_api(tmp_path: Path) -> Iterator[tuple[APIServerProcess, Path]]:
    log = tmp_path / "requests.log"
    server = APIServerProcess(home=tmp_path / "home", extra_args=("--audit-log", str(log)))
    server.start()
    try:
        yield server, log
    finally:
        server.stop()


@pytest.fixture
def router_home() -> Iterator[Path]:
    # Short: HAProxy's internal UNIX socket path must fit in 107 bytes.
    path = Path(tempfile.mkdtemp(prefix="snrb-", dir="/tmp"))
    try:
        yield path
    finally:
        kill_haproxy(path / "router-router")
        shutil.rmtree(path, ignore_errors=True)


def start_router(api: APIServerProcess, home: Path) -> subprocess.Popen[str]:
    """A router that has only a copy of the kubeconfig, as on another machine."""
    kubeconfig = home / "kubeconfig"
    shutil.copyfile(api.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIFTNET_", "KUBE"))}
    env["HOME"] = str(home)
    ports = [f"--{p}-port={free_port()}" for p in ("http", "https", "stats")]
    return subprocess.Popen(
        [SHIFTNET, "--kubeconfig", str(kubeconfig), "--state-dir", str(home), "router", *ports],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def admitted(api: APIServerProcess, namespace: str, name: str) -> bool:
    route = api.json("get", "route", name, "-n", namespace)
    ingress = (route.get("status") or {}).get("ingress") or []
    return any(c["status"] == "True" for e in ingress for c in e.get("conditions") or [])


def refusal_count(api: APIServerProcess) -> int:
    events = api.json("get", "events", "-n", "other")["items"]
    return sum(int(e.get("count") or 1) for e in events if e.get("reason") == "HostAlreadyClaimed")


def wait(what: str, check: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.3)


def test_the_router_rbac_table_is_exactly_what_the_router_sends(
    audit_api: tuple[APIServerProcess, Path], router_home: Path
) -> None:
    api, log = audit_api
    router = start_router(api, router_home)
    try:
        assert router.stdout is not None
        line = router.stdout.readline()
        assert "serving http" in line, line + (router.stderr.read() if router.stderr else "")
        api.ok("apply", "-f", "-", input=OBJECTS)
        wait("web admitted", lambda: admitted(api, "shop", "web"))
        time.sleep(1.1)  # creation times have seconds: the thief is the younger claim
        api.ok("apply", "-f", "-", input=THIEF)
        wait("thief refused with an Event", lambda: refusal_count(api) == 1)
        # its status cleared: the router writes it again, and folds the same Event
        api.ok(
            "patch", "route", "thief", "-n", "other", "--subresource=status",
            "--type=merge", "-p", '{"status": {"ingress": []}}',
        )  # fmt: skip
        wait("the Event folded", lambda: refusal_count(api) == 2)
    finally:
        stop(router)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    mine = [r for r in records if not r["userAgent"].startswith("kubectl/")]
    assert mine, "the request log holds none of the router's requests"
    sent = {
        (
            r["verb"],
            r["group"],
            r["resource"] + (f"/{r['subresource']}" if "subresource" in r else ""),
        )
        for r in mine
        if "resource" in r
    }
    documented = documented_rules(DOC.read_text())
    assert sent == documented, (
        f"sent but not in docs/router.md: {sorted(sent - documented)}; "
        f"in docs/router.md but never sent: {sorted(documented - sent)}"
    )
    # discovery only beyond resources: what system:discovery grants every user
    others = {r["nonResourceURL"] for r in mine if "nonResourceURL" in r}
    assert all(
        u in ("/api", "/apis", "/version") or u.startswith(("/api/", "/apis/")) for u in others
    ), others
