"""kubectl's protobuf bodies against a real ``shiftnet apiserver``.

kubectl's generators and typed clients send ``application/vnd.kubernetes.protobuf``
whatever the server says. Each kubectl test goes through a recording proxy
(:mod:`tests.support.body_recorder`), so it also shows which encoding kubectl
really used; the objects are then read back with ``kubectl get``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from tests.support.apiserver import KUBECTL, APIServerProcess
from tests.support.body_recorder import BodyRecorder
from tests.support.protobuf_encoder import envelope, msg, num, raw, text

from shiftnet.store import open_store

pytestmark = pytest.mark.integration

PROTOBUF = "application/vnd.kubernetes.protobuf"
SERVICES = "/api/v1/namespaces/default/services"


class Recorded:
    """kubectl through a :class:`BodyRecorder` in front of the test's server."""

    def __init__(self, api: APIServerProcess, tmp: Path) -> None:
        self.api = api
        self.recorder = BodyRecorder(api.url, api.token, api.ca)
        self.kubeconfig = tmp / "recorded-kubeconfig"

    def kubectl(self, *args: str, input: str | None = None) -> tuple[int, str, str, list[str]]:
        """Exit code, stdout, stderr and ``METHOD path content-type`` of each write."""
        import subprocess

        before = len(self.recorder.requests)
        env = self.api.env() | {"KUBECONFIG": str(self.kubeconfig)}
        res = subprocess.run(
            [KUBECTL, *args], input=input, env=env, capture_output=True, text=True, timeout=60
        )
        writes = [
            f"{r.method} {r.path.split('?')[0]} {r.content_type}"
            for r in self.recorder.requests[before:]
            if r.method in ("POST", "PUT", "DELETE") and r.body
        ]
        return res.returncode, res.stdout, res.stderr, writes


@pytest.fixture
def rec(api: APIServerProcess, tmp_path: Path) -> Iterator[Recorded]:
    recorded = Recorded(api, tmp_path)
    recorded.recorder.start()
    recorded.recorder.kubeconfig(recorded.kubeconfig)
    try:
        yield recorded
    finally:
        recorded.recorder.stop()


def get_yaml(api: APIServerProcess, *args: str) -> Any:
    return yaml.safe_load(api.ok("get", *args, "-o", "yaml"))


def revision(api: APIServerProcess) -> int:
    async def rev() -> int:
        store = open_store(api.store)
        try:
            return await store.revision()
        finally:
            await store.close()

    return asyncio.run(rev())


def test_kubectl_create_namespace(api: APIServerProcess, rec: Recorded) -> None:
    code, out, err, writes = rec.kubectl("create", "namespace", "shop")
    assert (code, out.strip()) == (0, "namespace/shop created"), err
    assert writes == [f"POST /api/v1/namespaces {PROTOBUF}"]
    ns = get_yaml(api, "namespace", "shop")
    assert ns["metadata"]["name"] == "shop"
    assert set(ns["metadata"]) == {
        "name",
        "labels",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
    }
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "shop"}
    assert ns["status"] == {"phase": "Active"}

    code, _, err, _ = rec.kubectl("create", "namespace", "shop")
    assert code != 0 and 'namespaces "shop" already exists' in err
    code, _, err, _ = rec.kubectl("create", "namespace", "Bad_Name")
    assert code != 0
    assert 'The Namespace "Bad_Name" is invalid: metadata.name: Invalid value' in err
    code, out, err, _ = rec.kubectl("create", "namespace", "dry", "--dry-run=server")
    assert code == 0, err
    names = api.ok("get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}").split()
    assert names == ["shop"]


def test_kubectl_create_service_of_each_type(api: APIServerProcess, rec: Recorded) -> None:
    code, out, err, writes = rec.kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    assert (code, out.strip()) == (0, "service/web created"), err
    assert writes == [f"POST {SERVICES} {PROTOBUF}"]
    svc = get_yaml(api, "service", "web")
    assert svc["metadata"]["labels"] == {"app": "web"}
    assert svc["metadata"]["namespace"] == "default"
    assert svc["spec"] == {
        "ports": [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}],
        "selector": {"app": "web"},
        "sessionAffinity": "None",
        "type": "ClusterIP",
    }

    for args in (
        ("nodeport", "np", "--tcp=80:8080", "--node-port=30080"),
        ("loadbalancer", "lb", "--tcp=443:8443"),
        ("externalname", "ext", "--external-name=db.example.com"),
        ("clusterip", "headless", "--clusterip=None"),
    ):
        code, _, err, _ = rec.kubectl("create", "service", *args)
        assert code == 0, err
    assert get_yaml(api, "service", "np")["spec"]["ports"] == [
        {"name": "80-8080", "nodePort": 30080, "port": 80, "protocol": "TCP", "targetPort": 8080}
    ]
    assert get_yaml(api, "service", "lb")["spec"]["type"] == "LoadBalancer"
    ext = get_yaml(api, "service", "ext")["spec"]
    assert (ext["type"], ext["externalName"]) == ("ExternalName", "db.example.com")
    assert get_yaml(api, "service", "headless")["spec"]["clusterIP"] == "None"

    # an invalid value is refused with its field named, and nothing is written
    code, _, err, _ = rec.kubectl(
        "create", "service", "nodeport", "bad", "--tcp=80:8080", "--node-port=99999"
    )
    assert code != 0
    assert 'Service "bad" is invalid: spec.ports[0].nodePort: Invalid value: 99999' in err
    assert "bad" not in api.ok("get", "services", "-o", "name")


def test_kubectl_run_sends_json_and_debug_copies_the_pod_as_protobuf(
    api: APIServerProcess, rec: Recorded
) -> None:
    code, out, err, writes = rec.kubectl(
        "run", "web", "--image=x", "--command", "--", "python3", "-m", "http.server"
    )
    assert (code, out.strip()) == (0, "pod/web created"), err
    assert writes == ["POST /api/v1/namespaces/default/pods application/json"]
    pod = get_yaml(api, "pod", "web")
    assert pod["metadata"]["labels"] == {"run": "web"}
    assert pod["spec"] == {
        "containers": [{"command": ["python3", "-m", "http.server"], "image": "x", "name": "web"}],
        "dnsPolicy": "ClusterFirst",  # defaulted, as Kubernetes does
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
    }

    code, _, err, writes = rec.kubectl(
        "debug", "web", "--copy-to=web-copy", "--image=busybox", "--container=dbg"
    )
    assert code == 0, err
    assert writes == [f"POST /api/v1/namespaces/default/pods {PROTOBUF}"]
    assert "unknown field" not in err, err  # every field kubectl debug copies is known
    copy = get_yaml(api, "pod", "web-copy")
    assert copy["spec"]["containers"] == [
        {"command": ["python3", "-m", "http.server"], "image": "x", "name": "web"},
        {"image": "busybox", "name": "dbg", "terminationMessagePolicy": "File"},
    ]


def test_kubectl_drain_deletes_with_protobuf_delete_options(
    api: APIServerProcess, rec: Recorded
) -> None:
    api.ok(
        "apply",
        "-f",
        "-",
        input=(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: on-n1, namespace: default}\n"
            "spec: {nodeName: n1, containers: [{name: c, image: x}]}\n"
        ),
    )
    code, out, err, writes = rec.kubectl(
        "drain", "n1", "--disable-eviction", "--force", "--grace-period=5", "--timeout=30s"
    )
    assert code == 0, err
    assert "pod/on-n1 deleted" in out and "node/n1 drained" in out
    assert writes == [f"DELETE /api/v1/namespaces/default/pods/on-n1 {PROTOBUF}"]
    assert api.ok("get", "pods", "-o", "name").strip() == ""


def service_body(*spec: bytes, name: str = "raw") -> bytes:
    return envelope("v1", "Service", msg(1, text(1, name)) + msg(2, msg(1, num(3, 80)), *spec))


def test_raw_protobuf_bad_input_is_refused_in_one_sentence_and_writes_nothing(
    api: APIServerProcess, http: httpx.Client
) -> None:
    proto = {"Content-Type": PROTOBUF}
    before = revision(api)

    malformed = http.post(SERVICES, content=b"k8s\x00\x0a\x80", headers=proto)
    assert malformed.status_code == 400 and malformed.json()["reason"] == "BadRequest"
    assert malformed.json()["message"] == (
        "the request body is not valid protobuf: "
        "in the envelope: a varint at byte 1 runs past the end"
    )
    endpoints = envelope("v1", "Endpoints", msg(1, text(1, "e")))
    other = http.post("/api/v1/namespaces/default/endpoints", content=endpoints, headers=proto)
    assert other.status_code == 415 and other.json()["reason"] == "UnsupportedMediaType"
    assert "send Endpoints (v1) as JSON or YAML" in other.json()["message"]
    strict = http.post(
        SERVICES + "?fieldValidation=Strict", content=service_body(text(42, "x")), headers=proto
    )
    assert strict.status_code == 400
    assert (
        'strict decoding error: unknown field "spec.(protobuf field 42)"'
        in (strict.json()["message"])
    )
    wrong_place = http.post("/api/v1/namespaces", content=service_body(), headers=proto)
    assert wrong_place.status_code == 400
    only_protobuf = http.get(SERVICES, headers={"Accept": PROTOBUF})
    assert only_protobuf.status_code == 406
    assert only_protobuf.json()["message"] == (
        "only the following media types are accepted: application/json"
    )
    assert revision(api) == before

    warned = http.post(SERVICES, content=service_body(text(42, "x")), headers=proto)
    assert warned.status_code == 201
    assert warned.headers.get_list("Warning") == [
        '299 - "unknown field \\"spec.(protobuf field 42)\\""'
    ]
    assert warned.json()["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    both = http.get(SERVICES, headers={"Accept": f"{PROTOBUF},application/json"})
    assert both.status_code == 200 and both.headers["Content-Type"].startswith("application/json")


def test_a_managed_fields_tree_nested_too_deep_is_refused(
    api: APIServerProcess, http: httpx.Client
) -> None:
    """fieldsV1 is JSON inside protobuf: it nests no deeper than a JSON body may."""
    before = revision(api)
    for depth in (101, 100_000):
        tree = b'{"f:a":' * depth + b"{}" + b"}" * depth
        entry = msg(17, text(1, "m"), text(2, "Update"), text(6, "FieldsV1"), msg(7, raw(1, tree)))
        body = envelope(
            "v1", "Service", msg(1, text(1, "deep"), entry) + msg(2, msg(1, num(3, 80)))
        )
        refused = http.post(SERVICES, content=body, headers={"Content-Type": PROTOBUF})
        assert refused.status_code == 400, refused.text
        assert refused.json()["message"] == (
            "the request body is not valid protobuf: "
            "metadata.managedFields[0].fieldsV1 nests deeper than 100 levels"
        )
    assert revision(api) == before
