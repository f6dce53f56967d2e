"""Debian 12's own kubectl (``kubernetes-client``, 1.20) against a running ``shiftnet
apiserver``: the fallback client the set-up installs when a machine has no other.

kubectl before 1.27 reads the OpenAPI document as protobuf only, before
``apply``, ``explain`` and its own validation; these are the commands a user
of that client types. ``scripts/install.sh --with-debian-kubectl`` (run by
``setup-and-test``) unpacks it into ``.venv/debian-kubectl``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess

from shiftnet.sdn.pods import log_dir

pytestmark = pytest.mark.integration

DEBIAN_KUBECTL = Path(sys.prefix) / "debian-kubectl" / "usr" / "bin" / "kubectl"

ROUTE = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web, labels: {app: web}}
spec:
  host: HOST
  to: {kind: Service, name: web}
  tls: {termination: edge}
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: https, port: 443, targetPort: TARGET}
"""


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  nodeName: n1
  containers:
  - {name: main, image: none, command: ["true"]}
"""


def kubectl(api: APIServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DEBIAN_KUBECTL), *args],
        env=api.env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def ok(api: APIServerProcess, *args: str) -> str:
    done = kubectl(api, *args)
    assert done.returncode == 0, f"kubectl 1.20 {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture(autouse=True)
def _debian_kubectl() -> None:
    if not DEBIAN_KUBECTL.exists():
        pytest.skip("Debian's kubectl not unpacked (scripts/install.sh --with-debian-kubectl)")
    assert "v1.20." in ok_version()


def ok_version() -> str:
    return subprocess.run(
        [str(DEBIAN_KUBECTL), "version", "--client", "--short"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip


def test_apply_explain_and_validation_with_kubectl_1_20(
    api: APIServerProcess, tmp_path: Path
) -> None:
    route = tmp_path / "route.yaml"
    route.write_text(ROUTE.replace("HOST", "web.example.com"))
    assert ok(api, "apply", "-f", str(route)).strip() == "route.route.openshift.io/web created"
    assert ok(api, "apply", "-f", str(route)).strip() == "route.route.openshift.io/web unchanged"
    route.write_text(ROUTE.replace("HOST", "web2.example.com"))
    assert ok(api, "apply", "-f", str(route)).strip() == "route.route.openshift.io/web configured"
    table = ok(api, "get", "routes").splitlines()
    assert table[0].split() == [
        "NAME", "HOST/PORT", "PATH", "SERVICES", "PORT", "TERMINATION", "WILDCARD"
    ]  # fmt: skip
    assert table[1].split() == ["web", "web2.example.com", "web", "<all>", "edge", "None"]

    explained = ok(api, "explain", "route.spec.tls")
    assert "RESOURCE: tls <Object>" in explained and "termination" in explained

    # kubectl's own validation, from the protobuf document: nothing reaches the server.
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(ROUTE.replace("HOST", "u.example.com").replace("name: web,", "name: u,")
                       + "  bogus: 1\n")  # fmt: skip
    refused = kubectl(api, "apply", "-f", str(unknown))
    assert refused.returncode != 0
    assert 'unknown field "bogus"' in refused.stderr and "RouteSpec" in refused.stderr
    # The server's validation names the field.
    passthrough = tmp_path / "passthrough.yaml"
    passthrough.write_text(
        ROUTE.replace("HOST", "p.example.com\n  path: /admin")
        .replace("name: web,", "name: p,")
        .replace("edge", "passthrough")
    )
    refused = kubectl(api, "apply", "-f", str(passthrough))
    assert refused.returncode != 0 and "spec.path" in refused.stderr
    assert ok(api, "get", "routes", "-o", "name").split() == ["route.route.openshift.io/web"]


def test_strategic_merge_apply_of_a_service_and_a_stale_replace(
    api: APIServerProcess, tmp_path: Path
) -> None:
    service = tmp_path / "service.yaml"
    service.write_text(SERVICE.replace("TARGET", "8443"))
    assert ok(api, "apply", "-f", str(service)).strip() == "service/web created"
    added = '[{"op": "add", "path": "/spec/ports/-", "value": {"name": "m", "port": 9100}}]'
    ok(api, "patch", "service", "web", "--type=json", "-p", added)
    service.write_text(SERVICE.replace("TARGET", "9443"))
    assert ok(api, "apply", "-f", str(service)).strip() == "service/web configured"
    # A strategic merge by the ports' merge key: the port added by another hand stays.
    ports = ok(api, "get", "service", "web", "-o", "jsonpath={.spec.ports[*].port}")
    assert ports.split() == ["80", "443", "9100"]
    targets = ok(api, "get", "service", "web", "-o", "jsonpath={.spec.ports[*].targetPort}")
    assert targets.split()[:2] == ["8080", "9443"]

    stale = tmp_path / "stale.yaml"
    stale.write_text(ok(api, "get", "service", "web", "-o", "yaml"))
    ok(api, "label", "service", "web", "tier=front")
    refused = kubectl(api, "replace", "-f", str(stale))
    assert refused.returncode != 0 and "the object has been modified" in refused.stderr
    ok(api, "delete", "-f", str(service))
    gone = kubectl(api, "get", "service", "web")
    assert gone.returncode != 0 and 'services "web" not found' in gone.stderr


def test_discovery_selectors_watch_and_logs_with_kubectl_1_20(
    api: APIServerProcess, tmp_path: Path
) -> None:
    resources = ok(api, "api-resources", "--api-group=route.openshift.io").splitlines()
    assert resources[1].split() == ["routes", "route.openshift.io/v1", "true", "Route"]
    assert "svc" in ok(api, "api-resources").split()
    route = tmp_path / "route.yaml"
    route.write_text(ROUTE.replace("HOST", "web.example.com"))
    ok(api, "apply", "-f", str(route))
    watcher = subprocess.Popen(
        [str(DEBIAN_KUBECTL), "get", "routes", "-w", "-o", "name", "--request-timeout=0"],
        env=api.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().strip() == "route.route.openshift.io/web"
        ok(api, "label", "route", "web", "tier=front")
        assert watcher.stdout.readline().strip() == "route.route.openshift.io/web"
    finally:
        watcher.kill()
        watcher.wait(timeout=10)
    assert ok(api, "get", "routes", "-l", "tier=front", "-o", "name").split() == [
        "route.route.openshift.io/web"
    ]
    assert ok(api, "get", "routes", "-l", "tier=back", "-o", "name") == ""

    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    ok(api, "create", "-f", str(pod))
    path = log_dir(api.home / "nodes" / "n1", "default", "talker") / "main.log"
    path.parent.mkdir(parents=True)
    path.write_text("one\ntwo\nthree\n")
    assert ok(api, "logs", "talker", "--tail=2") == "two\nthree\n"
