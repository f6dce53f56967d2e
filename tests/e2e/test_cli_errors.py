"""Bad input through the real ``shiftnet`` command: one sentence naming the file, document,
object and field; a non-zero exit; nothing written."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from tests.support.cli import Shiftnet, one_error_line

ROUTE = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: web
spec:
  host: www.example.com
  to:
    kind: Service
    name: web
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
    - port: 80
      targetPort: 8080
"""


@pytest.fixture
def sn(tmp_path: Path) -> Shiftnet:
    return Shiftnet(f"sqlite://{tmp_path}/state.db", tmp_path / "home")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def refused(sn: Shiftnet, *args: str, input: str | None = None) -> str:
    """Run a command that must fail without writing; return its one error sentence."""
    before = sn.revision()
    res = sn.run(*args, input=input)
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == "", res.stdout  # not even the valid documents were applied
    assert sn.revision() == before
    return one_error_line(res.stderr)


def test_malformed_yaml_names_file_and_line(sn: Shiftnet, tmp_path: Path) -> None:
    bad = write(
        tmp_path,
        "bad.yaml",
        SERVICE + "---\n" + "kind: Route\nmetadata:\n  name: x\n   host: oops\n",
    )
    msg = refused(sn, "apply", "-f", bad)
    assert bad in msg and "line 15, column 8" in msg and "invalid YAML" in msg


def test_malformed_json_names_file_and_line(sn: Shiftnet, tmp_path: Path) -> None:
    bad = write(
        tmp_path, "bad.json", '{\n  "apiVersion": "v1",\n  "kind": "Service"\n  "x": 1\n}\n'
    )
    msg = refused(sn, "apply", "-f", bad)
    assert bad in msg and "line 4" in msg and "invalid JSON" in msg


def test_unknown_kind_names_document_and_object(sn: Shiftnet, tmp_path: Path) -> None:
    text = SERVICE + "---\n" + ROUTE.replace("kind: Route", "kind: Rout")
    msg = refused(sn, "apply", "-f", write(tmp_path, "two.yaml", text))
    assert "two.yaml: document 2 (line 12)" in msg
    assert 'object "web": unknown kind "Rout"' in msg


def test_unknown_field_names_object_and_field_path(sn: Shiftnet, tmp_path: Path) -> None:
    text = SERVICE + "---\n" + ROUTE.replace("  host:", "  hots:")
    msg = refused(sn, "apply", "-f", write(tmp_path, "r.yaml", text))
    assert "document 2" in msg and 'Route "web" is invalid: spec.hots: unknown field' in msg


def test_invalid_value_is_refused_by_validation(sn: Shiftnet, tmp_path: Path) -> None:
    text = SERVICE + "---\n" + ROUTE.replace("www.example.com", "Bad_Host.example.com")
    msg = refused(sn, "apply", "-f", write(tmp_path, "r.yaml", text))
    assert "document 2" in msg and 'Route "web"' in msg and "spec.host" in msg


def test_bad_document_in_a_directory_writes_none_of_the_others(
    sn: Shiftnet, tmp_path: Path
) -> None:
    d = tmp_path / "manifests"
    d.mkdir()
    (d / "a-service.yaml").write_text(SERVICE)
    (d / "b-route.yaml").write_text(
        ROUTE.replace("kind: Service\n    name: web", "kind: Pod\n    name: web")
    )
    msg = refused(sn, "apply", "-f", str(d))
    assert "b-route.yaml" in msg and 'Route "web"' in msg and "spec.to.kind" in msg


def test_stale_resource_version_is_a_conflict(sn: Shiftnet, tmp_path: Path) -> None:
    assert sn.ok("apply", "-f", "-", input=SERVICE) == "service/web created\n"
    stale = SERVICE.replace("  name: web\n", '  name: web\n  resourceVersion: "1"\n').replace(
        "80", "81"
    )
    sn.ok("apply", "-f", "-", input=SERVICE.replace("port: 80", "port: 82"))  # moves the version on
    msg = refused(sn, "apply", "-f", "-", input=stale)
    assert (
        "<stdin>: document 1" in msg and "Operation cannot be fulfilled" in msg and '"web"' in msg
    )


def test_cluster_ip_cannot_change(sn: Shiftnet) -> None:
    sn.ok("apply", "-f", "-", input=SERVICE.replace("spec:\n", "spec:\n  clusterIP: 127.30.0.5\n"))
    msg = refused(
        sn, "apply", "-f", "-", input=SERVICE.replace("spec:\n", "spec:\n  clusterIP: 127.30.0.6\n")
    )
    assert 'Service "web" is invalid: spec.clusterIP' in msg and "immutable" in msg


def test_namespace_mismatch_with_flag(sn: Shiftnet) -> None:
    text = SERVICE.replace("  name: web\n", "  name: web\n  namespace: prod\n")
    msg = refused(sn, "apply", "-n", "dev", "-f", "-", input=text)
    assert '"prod"' in msg and '"dev"' in msg


def test_missing_file_and_empty_input(sn: Shiftnet, tmp_path: Path) -> None:
    msg = refused(sn, "apply", "-f", str(tmp_path / "nope.yaml"))
    assert "nope.yaml" in msg and "does not exist" in msg
    msg = refused(sn, "apply", "-f", "-", input="# only a comment\n")
    assert "no objects" in msg


def test_unknown_resource_type_and_bad_selector(sn: Shiftnet) -> None:
    msg = refused(sn, "get", "rout")
    assert 'unknown resource type "rout"' in msg
    msg = refused(sn, "get", "pods", "-l", "app in (a")
    assert "label selector" in msg


def test_short_names_resolve(sn: Shiftnet) -> None:
    sn.ok("apply", "-f", "-", input=SERVICE)
    names = sn.ok(
        "get",
        "svc,service,services,SVC,po,ep,ns,no,routes,route.route.openshift.io,"
        "hostsubnets,clusternetworks",
        "-o",
        "name",
    )
    assert names.splitlines() == ["service/web"] * 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_store_is_one_sentence(tmp_path: Path) -> None:
    down = Shiftnet(f"etcd://127.0.0.1:{free_port()}", tmp_path / "home")
    res = down.run("get", "routes")
    assert res.returncode == 1
    msg = one_error_line(res.stderr)
    assert "cannot reach etcd" in msg
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    res = Shiftnet(f"sqlite://{blocked}/sub/state.db", tmp_path / "home").run(
        "apply", "-f", "-", input=SERVICE
    )
    assert res.returncode == 1
    assert "cannot open the store" in one_error_line(res.stderr)


def test_debug_shows_the_traceback(sn: Shiftnet) -> None:
    res = sn.run("--debug", "get", "rout")
    assert res.returncode != 0 and "Traceback" in res.stderr


CLUSTER_NETWORK = """\
apiVersion: network.openshift.io/v1
kind: ClusterNetwork
metadata:
  name: default
network: 127.10.0.0/16
hostsubnetlength: 8
serviceNetwork: 127.30.0.0/16
"""


def service_at(name: str, ip: str) -> str:
    return SERVICE.replace("name: web", f"name: {name}").replace(
        "spec:\n", f"spec:\n  clusterIP: {ip}\n"
    )


def test_cluster_ip_requests_are_checked_before_writing(sn: Shiftnet, tmp_path: Path) -> None:
    sn.ok("apply", "-f", "-", input=CLUSTER_NETWORK)
    sn.ok("apply", "-f", "-", input=service_at("first", "127.30.0.10"))
    taken = write(tmp_path, "taken.yaml", ROUTE + "---\n" + service_at("second", "127.30.0.10"))
    msg = refused(sn, "apply", "-f", taken)
    assert "provided IP is already allocated" in msg and "taken.yaml" in msg
    outside = write(tmp_path, "outside.yaml", service_at("third", "127.31.0.1"))
    assert "not in the valid range" in refused(sn, "apply", "-f", outside)
    # two Services of one apply asking for the same address: refused before either is written
    pair = write(
        tmp_path,
        "pair.yaml",
        service_at("a", "127.30.0.20") + "---\n" + service_at("b", "127.30.0.20"),
    )
    assert "provided IP is already allocated" in refused(sn, "apply", "-f", pair)
    # re-applying the holder itself is fine
    assert "unchanged" in sn.ok("apply", "-f", "-", input=service_at("first", "127.30.0.10"))
