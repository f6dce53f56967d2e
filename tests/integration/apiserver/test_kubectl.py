"""The real kubectl against a running ``shiftnet apiserver``: what users type, what they see."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from tests.support.apiserver import KUBECTL, SHIFTNET, APIServerProcess

from shiftnet.sdn.pods import log_dir

pytestmark = pytest.mark.integration

# kubectl checks fields against the served OpenAPI, and the server with fieldValidation.
VALIDATE = "--validate=strict"

ROUTE = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  host: web.example.com
  to: {kind: Service, name: web}
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: metrics, port: 9100}
"""
PASSTHROUGH_WITH_PATH = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: secure}
spec:
  host: secure.example.com
  path: /admin
  to: {kind: Service, name: web}
  tls: {termination: passthrough}
"""


def apply(api: APIServerProcess, path: Path) -> str:
    return api.ok("apply", VALIDATE, "-f", str(path)).strip()


def test_apply_creates_then_unchanged_then_configured(
    api: APIServerProcess, tmp_path: Path
) -> None:
    route, svc = tmp_path / "route.yaml", tmp_path / "svc.yaml"
    route.write_text(ROUTE)
    svc.write_text(SERVICE)
    assert apply(api, route) == "route.route.openshift.io/web created"
    assert apply(api, svc) == "service/web created"
    assert apply(api, route) == "route.route.openshift.io/web unchanged"
    assert apply(api, svc) == "service/web unchanged"
    route.write_text(ROUTE.replace("web.example.com", "www.example.com"))
    # a strategic merge patch on the Service's ports list (merge key: port)
    svc.write_text(SERVICE.replace("targetPort: 8080", "targetPort: 8081"))
    assert apply(api, route) == "route.route.openshift.io/web configured"
    assert apply(api, svc) == "service/web configured"
    got = api.json("get", "route", "web")
    assert got["spec"]["host"] == "www.example.com"
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
    spec = api.json("get", "svc", "web")["spec"]
    assert "publishNotReadyAddresses" not in spec  # false is left out, as upstream
    ports = spec["ports"]
    assert [(p["name"], p["port"], p.get("targetPort")) for p in ports] == [
        ("http", 80, 8081),
        ("metrics", 9100, 9100),  # targetPort defaults to port, as upstream
    ]
    # removing a port from the file removes it from the object
    svc.write_text(SERVICE.replace("  - {name: metrics, port: 9100}\n", ""))
    assert apply(api, svc) == "service/web configured"
    assert [p["name"] for p in api.json("get", "svc", "web")["spec"]["ports"]] == ["http"]


def test_get_yaml_jsonpath_and_label_selectors(api: APIServerProcess, tmp_path: Path) -> None:
    api.ok("apply", VALIDATE, "-f", "-", input=ROUTE)
    other = ROUTE.replace("name: web\n", "name: api\n").replace("tier: front", "tier: back")
    api.ok("apply", VALIDATE, "-f", "-", input=other.replace("web.example", "api.example"))
    doc = yaml.safe_load(api.ok("get", "route", "web", "-o", "yaml"))
    assert doc["kind"] == "Route" and doc["apiVersion"] == "route.openshift.io/v1"
    stamp = doc["metadata"]["creationTimestamp"]
    assert len(stamp) == 20 and stamp.endswith("Z"), stamp  # RFC 3339 to the second
    assert "status" not in doc and "path" not in doc["spec"]  # empty fields omitted
    hosts = api.ok("get", "routes", "-o", "jsonpath={.items[*].spec.host}")
    assert hosts.split() == ["api.example.com", "web.example.com"]
    front = api.ok("get", "routes", "-l", "tier=front", "-o", "jsonpath={.items[*].metadata.name}")
    assert front == "web"
    names = api.ok("get", "routes", "--field-selector", "metadata.name!=web", "-o", "name").split()
    assert names == ["route.route.openshift.io/api"]
    # the table has the columns shiftnet get prints
    table = api.ok("get", "routes")
    assert table.splitlines()[0].split()[:3] == ["NAME", "HOST/PORT", "PATH"]
    # chunked lists (limit/continue) give every object once
    chunked = api.ok("get", "routes", "--chunk-size=1", "-o", "name").split()
    assert chunked == ["route.route.openshift.io/api", "route.route.openshift.io/web"]


def test_label_annotate_replace_conflict_delete(api: APIServerProcess, tmp_path: Path) -> None:
    api.ok("apply", VALIDATE, "-f", "-", input=SERVICE)
    stale = api.json("get", "svc", "web")
    assert api.ok("label", "svc", "web", "team=blue").strip() == "service/web labeled"
    assert api.ok("annotate", "svc", "web", "note=hi").strip() == "service/web annotated"
    fresh = api.json("get", "svc", "web")
    assert fresh["metadata"]["labels"]["team"] == "blue"
    assert fresh["metadata"]["annotations"]["note"] == "hi"
    stale["spec"]["ports"][0]["port"] = 81
    res = api.kubectl("replace", VALIDATE, "-f", "-", input=json.dumps(stale))
    assert res.returncode != 0
    assert "Conflict" in res.stderr
    assert (
        "the object has been modified; please apply your changes to the latest version and try "
        "again" in res.stderr
    )
    assert api.json("get", "svc", "web")["spec"]["ports"][0]["port"] == 80
    fresh["spec"]["ports"][0]["port"] = 81
    assert "replaced" in api.ok("replace", VALIDATE, "-f", "-", input=json.dumps(fresh))
    assert api.json("get", "svc", "web")["spec"]["ports"][0]["port"] == 81
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/team: blue/team: green/" "$1"\n')
    editor.chmod(0o700)
    edit = subprocess.run(
        [KUBECTL, "edit", "svc", "web"],
        env={**api.env(), "KUBE_EDITOR": str(editor)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert edit.returncode == 0 and "service/web edited" in edit.stdout, edit.stderr
    assert api.json("get", "svc", "web")["metadata"]["labels"]["team"] == "green"
    assert api.ok("delete", "svc", "web").strip() == 'service "web" deleted'
    gone = api.kubectl("get", "svc", "web")
    assert gone.returncode != 0
    assert 'Error from server (NotFound): services "web" not found' in gone.stderr


def test_patch_type_json_applies_in_order_and_a_failed_test_writes_nothing(
    api: APIServerProcess,
) -> None:
    """``kubectl patch --type=json``: RFC 6902 operations, all or none."""
    api.ok("apply", VALIDATE, "-f", "-", input=ROUTE)
    ops = [
        {"op": "replace", "path": "/spec/host", "value": "www.example.com"},
        {"op": "add", "path": "/metadata/labels/stage", "value": "prod"},
        {"op": "remove", "path": "/metadata/labels/tier"},
        {"op": "add", "path": "/spec/path", "value": "/shop"},
    ]
    done = api.ok("patch", "route", "web", "--type=json", "-p", json.dumps(ops))
    assert done.strip() == "route.route.openshift.io/web patched"
    got = api.json("get", "route", "web")
    assert got["spec"]["host"] == "www.example.com" and got["spec"]["path"] == "/shop"
    assert got["metadata"]["labels"] == {"app": "web", "stage": "prod"}
    # a failed "test" (or a path that is not there) refuses the whole patch
    for bad, named in (
        ([{"op": "replace", "path": "/spec/host", "value": "x.example.com"},
          {"op": "test", "path": "/spec/host", "value": "nope.example.com"}], "/spec/host"),
        ([{"op": "replace", "path": "/spec/host", "value": "x.example.com"},
          {"op": "remove", "path": "/spec/nothere"}], "/spec/nothere"),
    ):  # fmt: skip
        res = api.kubectl("patch", "route", "web", "--type=json", "-p", json.dumps(bad))
        assert res.returncode != 0 and "The request is invalid" in res.stderr, res.stderr
        assert "operation 2 " in res.stderr and named in res.stderr, res.stderr
    # and a patch that makes the route invalid is refused naming the field
    tls = [{"op": "add", "path": "/spec/tls", "value": {"termination": "passthrough"}}]
    res = api.kubectl("patch", "route", "web", "--type=json", "-p", json.dumps(tls))
    assert res.returncode != 0 and "spec.path" in res.stderr, res.stderr
    after = api.json("get", "route", "web")
    assert after["spec"]["host"] == "www.example.com" and "tls" not in after["spec"]
    assert after["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]


def test_an_invalid_route_is_refused_naming_its_field_and_writes_nothing(
    api: APIServerProcess, tmp_path: Path
) -> None:
    api.ok("get", "routes")  # the store exists
    before = api.ok("get", "--raw", "/apis/route.openshift.io/v1/routes")
    res = api.kubectl("apply", VALIDATE, "-f", "-", input=PASSTHROUGH_WITH_PATH)
    assert res.returncode != 0
    assert 'The Route "secure" is invalid' in res.stderr, res.stderr
    assert "spec.path" in res.stderr
    after = api.ok("get", "--raw", "/apis/route.openshift.io/v1/routes")
    assert (
        json.loads(after)["metadata"]["resourceVersion"]
        == json.loads(before)["metadata"]["resourceVersion"]
    )
    unknown = api.kubectl("create", VALIDATE, "-f", "-", input=ROUTE.replace("  host:", "  hots:"))
    assert unknown.returncode != 0 and "spec.hots" in unknown.stderr, unknown.stderr


def test_apply_validate_strict_warn_and_false(api: APIServerProcess) -> None:
    """kubectl's --validate becomes fieldValidation: strict refuses, warn prints kubectl's
    ``Warning:`` line and writes without the field, false writes without a word."""
    colourful = ROUTE.replace("  host:", "  colour: blue\n  host:")
    strict = api.kubectl("apply", "--validate=strict", "-f", "-", input=colourful)
    assert strict.returncode != 0
    assert 'strict decoding error: unknown field "spec.colour"' in strict.stderr, strict.stderr
    assert api.kubectl("get", "route", "web").returncode != 0  # nothing written
    warn = api.kubectl("apply", "--validate=warn", "-f", "-", input=colourful)
    assert warn.returncode == 0, warn.stderr
    assert warn.stdout.strip() == "route.route.openshift.io/web created"
    assert 'Warning: unknown field "spec.colour"' in warn.stderr, warn.stderr
    assert "colour" not in api.json("get", "route", "web")["spec"]
    quiet = api.kubectl(
        "apply", "--validate=false", "-f", "-", input=colourful.replace("name: web", "name: q")
    )
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "colour" not in api.json("get", "route", "q")["spec"]


TYPICAL_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: typical}
spec:
  serviceAccountName: default
  automountServiceAccountToken: false
  imagePullSecrets: [{name: registry}]
  priorityClassName: normal
  schedulerName: default-scheduler
  tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]
  containers:
  - name: web
    image: registry.example.com/web:1.0
    imagePullPolicy: IfNotPresent
    command: [python3, -m, http.server, "8080"]
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
"""


def test_a_pod_written_as_tutorials_write_them_is_applied_strictly_and_kept(
    api: APIServerProcess,
) -> None:
    # kubectl validates strictly by default: fields every real manifest carries must be
    # known, and kept as written (nothing here pulls images or enforces resources).
    made = api.kubectl("apply", VALIDATE, "-f", "-", input=TYPICAL_POD)
    assert made.returncode == 0 and made.stderr == "", made.stderr
    again = api.kubectl("apply", VALIDATE, "-f", "-", input=TYPICAL_POD)
    assert again.stdout.strip() == "pod/typical unchanged", again.stdout
    spec = api.json("get", "pod", "typical")["spec"]
    wanted = yaml.safe_load(TYPICAL_POD)["spec"]
    for field in ("serviceAccountName", "tolerations", "imagePullSecrets", "priorityClassName"):
        assert spec[field] == wanted[field], field
    (web,) = spec["containers"]
    assert web["resources"] == wanted["containers"][0]["resources"]
    assert web["imagePullPolicy"] == "IfNotPresent"
    bad = TYPICAL_POD.replace("name: typical", "name: bad").replace("IfNotPresent", "Sometimes")
    refused = api.kubectl("apply", VALIDATE, "-f", "-", input=bad)
    assert refused.returncode != 0
    assert 'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"' in refused.stderr
    assert api.kubectl("get", "pod", "bad").returncode != 0


def _shiftnet(api: APIServerProcess, *args: str) -> str:
    res = subprocess.run(
        [SHIFTNET, "--store", api.store, *args],
        capture_output=True,
        text=True,
        env=api.env(),
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_tables_match_shiftnet_get_and_all_and_wide(api: APIServerProcess) -> None:
    """kubectl get prints what shiftnet get prints (routes have no age: the outputs are
    equal byte for byte); ``all`` holds pods, services and routes; -o wide adds columns."""
    api.ok("apply", VALIDATE, "-f", "-", input=ROUTE)
    secure = PASSTHROUGH_WITH_PATH.replace("  path: /admin\n", "")
    api.ok("apply", VALIDATE, "-f", "-", input=secure)
    api.ok("apply", VALIDATE, "-f", "-", input=SERVICE)
    api.ok("create", VALIDATE, "-f", "-", input=POD)
    assert api.ok("get", "routes") == _shiftnet(api, "get", "routes")
    assert api.ok("get", "routes", "-A") == _shiftnet(api, "get", "routes", "-A")
    everything = api.ok("get", "all")
    for ref in ("pod/talker", "service/web", "route.route.openshift.io/web"):
        assert ref in everything, everything
    narrow = api.ok("get", "pods").splitlines()[0].split()
    wide = api.ok("get", "pods", "-o", "wide").splitlines()[0].split()
    assert "NODE" not in narrow and "NODE" in wide and "IP" in wide
    assert (
        api.ok("get", "pod", "talker", "-o", "wide").splitlines()[1].split()[wide.index("NODE")]
        == "n1"
    )


def test_delete_f_unknown_kinds_and_bodies_over_3_mib(
    api: APIServerProcess, tmp_path: Path
) -> None:
    both = tmp_path / "both.yaml"
    both.write_text(ROUTE + "---\n" + SERVICE)
    api.ok("apply", VALIDATE, "-f", str(both))
    deleted = api.ok("delete", "-f", str(both)).splitlines()
    assert deleted == [
        'route.route.openshift.io "web" deleted',
        'service "web" deleted',
    ]
    assert api.json("get", "routes,services")["items"] == []
    again = api.kubectl("delete", "-f", str(both))
    assert again.returncode != 0
    assert 'Error from server (NotFound): error when deleting "' in again.stderr, again.stderr
    # a kind the server does not serve: kubectl learns it from discovery, as on any cluster
    foo = "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\n"
    res = api.kubectl("apply", "-f", "-", input=foo)
    assert res.returncode != 0 and 'no matches for kind "Foo" in version "example.com/v1"' in (
        res.stderr
    ), res.stderr
    res = api.kubectl("get", "foos")
    assert res.returncode != 0
    assert 'the server doesn\'t have a resource type "foos"' in res.stderr, res.stderr
    raw = api.kubectl("get", "--raw", "/apis/example.com/v1/foos")
    assert raw.returncode != 0 and "NotFound" in raw.stderr, raw.stderr
    big = ROUTE.replace(
        "  labels:", f"  annotations: {{big: {'x' * (3 * 1024 * 1024)}}}\n  labels:"
    )
    res = api.kubectl("create", VALIDATE, "-f", "-", input=big)
    assert res.returncode != 0
    assert "Request entity too large: limit is 3145728" in res.stderr, res.stderr[:500]
    assert api.json("get", "routes")["items"] == []


def test_get_watch_prints_changes_as_they_happen(api: APIServerProcess) -> None:
    api.ok("apply", VALIDATE, "-f", "-", input=ROUTE)
    watcher = subprocess.Popen(
        [KUBECTL, "get", "routes", "-w", "-o", "name", "--request-timeout=0"],
        env=api.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().strip() == "route.route.openshift.io/web"
        api.ok("apply", VALIDATE, "-f", "-", input=ROUTE.replace("name: web", "name: two"))
        assert watcher.stdout.readline().strip() == "route.route.openshift.io/two"
        api.ok("delete", "route", "two")
        assert watcher.stdout.readline().strip() == "route.route.openshift.io/two"
    finally:
        watcher.kill()
        watcher.wait(timeout=10)


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: talker, namespace: default}
spec:
  nodeName: n1
  containers:
  - {name: main, image: none, command: ["true"]}
"""


def test_logs_tail_follow_and_timestamps(api: APIServerProcess) -> None:
    api.ok("create", VALIDATE, "-f", "-", input=POD)
    # the node agent's log file for this pod (shiftnet logs reads the same file)
    path = log_dir(api.home / "nodes" / "n1", "default", "talker") / "main.log"
    path.parent.mkdir(parents=True)
    path.write_text("one\ntwo\nthree\n")
    assert api.ok("logs", "talker", "--tail=2") == "two\nthree\n"
    stamped = api.ok("logs", "talker", "--timestamps", "--tail=1")
    stamp, line = stamped.rstrip("\n").split(" ", 1)
    assert line == "three" and stamp.endswith("Z") and "T" in stamp
    follower = subprocess.Popen(
        [KUBECTL, "logs", "-f", "talker", "--tail=0"],
        env=api.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)
        with path.open("a") as f:
            f.write("four\n")
        assert follower.stdout is not None
        assert follower.stdout.readline() == "four\n"
        api.ok("delete", "pod", "talker")
        follower.wait(timeout=15)  # the follow ends when the pod is gone
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(timeout=10)


def test_logs_of_a_pod_on_another_machine_say_where_they_are(api: APIServerProcess) -> None:
    api.ok("create", VALIDATE, "-f", "-", input=POD.replace("n1", "far"))
    res = api.kubectl("logs", "talker")
    assert res.returncode != 0
    assert (
        'logs of pod "talker" are kept on node "far", which this API server cannot read: '
        "run shiftnet logs on that node" in res.stderr
    ), res.stderr
    assert "ServiceUnavailable" in res.stderr
