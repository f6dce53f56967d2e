"""Server-side apply: the real ``kubectl apply --server-side`` and the official Python client
against a running ``shiftnet apiserver``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

APPLY = "application/apply-patch+yaml"
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
metadata: {name: web}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
"""
METRICS_PORT = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports:
  - {name: metrics, port: 9100}
"""

CONFLICT_HELP = "please re-run the apply\n  command with the `--force-conflicts` flag"


def ssa(api: APIServerProcess, path: Path, *flags: str) -> Any:
    return api.kubectl("apply", "--server-side", "--validate=strict", *flags, "-f", str(path))


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def shown(api: APIServerProcess, *what: str) -> dict[str, Any]:
    out = api.ok("get", *what, "-o", "json", "--show-managed-fields")
    found: dict[str, Any] = json.loads(out)
    return found


def test_route_created_unchanged_edited_conflicted_and_forced(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "route.yaml"
    path.write_text(ROUTE)
    made = ssa(api, path)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "route.route.openshift.io/web serverside-applied"
    first = shown(api, "route", "web")
    assert owners(first) == {
        ("kubectl", "Apply"): {
            "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}},
            "f:spec": {"f:host": {}, "f:to": {"f:kind": {}, "f:name": {}}},
        }
    }
    # the same configuration again writes nothing, as upstream
    assert ssa(api, path).returncode == 0
    assert shown(api, "route", "web") == first

    # an edit: a new host, and a label the manager no longer applies is removed
    path.write_text(
        ROUTE.replace("web.example.com", "www.example.com").replace(", tier: front", "")
    )
    assert ssa(api, path).returncode == 0
    edited = shown(api, "route", "web")
    assert edited["spec"]["host"] == "www.example.com"
    assert edited["metadata"]["labels"] == {"app": "web"}
    assert edited["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]

    # another manager with another host: kubectl's conflict error, nothing written
    other = tmp_path / "other.yaml"
    other.write_text(ROUTE.replace("web.example.com", "shop.example.com"))
    refused = ssa(api, other, "--field-manager=other")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.host\n'
    )
    assert CONFLICT_HELP in refused.stderr
    assert shown(api, "route", "web") == edited

    # --force-conflicts takes the host over; the labels both apply are shared
    forced = ssa(api, other, "--field-manager=other", "--force-conflicts")
    assert forced.returncode == 0, forced.stderr
    taken = shown(api, "route", "web")
    assert taken["spec"]["host"] == "shop.example.com"
    fields = owners(taken)
    assert "f:host" in fields[("other", "Apply")]["f:spec"]
    assert "f:host" not in fields[("kubectl", "Apply")]["f:spec"]
    assert "f:app" in fields[("kubectl", "Apply")]["f:metadata"]["f:labels"]


def test_service_ports_merge_by_port_and_protocol(api: APIServerProcess, tmp_path: Path) -> None:
    web, metrics = tmp_path / "svc.yaml", tmp_path / "metrics.yaml"
    web.write_text(SERVICE)
    metrics.write_text(METRICS_PORT)
    assert ssa(api, web).stdout.strip() == "service/web serverside-applied"
    rv = shown(api, "svc", "web")["metadata"]["resourceVersion"]
    added = ssa(api, metrics, "--field-manager=metrics")
    assert added.returncode == 0, added.stderr
    svc = shown(api, "svc", "web")
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [
        ("http", 80),
        ("metrics", 9100),
    ]
    key = 'k:{"port":9100,"protocol":"TCP"}'
    assert owners(svc)[("metrics", "Apply")] == {
        "f:spec": {"f:ports": {key: {".": {}, "f:name": {}, "f:port": {}}}}
    }
    assert svc["metadata"]["resourceVersion"] != rv
    # kubectl re-applies its own port: the metrics port, which it never applied, stays
    assert ssa(api, web).returncode == 0
    assert [p["port"] for p in shown(api, "svc", "web")["spec"]["ports"]] == [80, 9100]

    # another manager changing a port kubectl owns: the field named as kubectl names it
    web.write_text(SERVICE.replace("8080", "8081"))
    refused = ssa(api, web, "--field-manager=other")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl": '
        '.spec.ports[port=80,protocol="TCP"].targetPort\n'
    )
    assert shown(api, "svc", "web")["spec"]["ports"][0]["targetPort"] == 8080

    # kubectl drops its port 80 from the configuration: it is removed, 9100 stays
    web.write_text(SERVICE.replace("name: http, port: 80, targetPort: 8080", "name: h, port: 81"))
    assert ssa(api, web).returncode == 0
    assert [p["port"] for p in shown(api, "svc", "web")["spec"]["ports"]] == [9100, 81]


def test_a_later_update_owns_what_it_changed(api: APIServerProcess, tmp_path: Path) -> None:
    path = tmp_path / "route.yaml"
    path.write_text(ROUTE)
    assert ssa(api, path).returncode == 0
    api.ok("label", "route", "web", "tier=back", "--overwrite")
    labelled = shown(api, "route", "web")
    update = owners(labelled)[("kubectl-label", "Update")]
    assert update == {"f:metadata": {"f:labels": {"f:tier": {}}}}
    refused = ssa(api, path)  # kubectl's own configuration still says tier=front
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "error: Apply failed with 1 conflict: conflict with "
        '"kubectl-label" using route.openshift.io/v1: .metadata.labels.tier\n'
    )
    assert shown(api, "route", "web") == labelled


def test_an_object_written_before_its_first_apply(api: APIServerProcess, tmp_path: Path) -> None:
    path = tmp_path / "route.yaml"
    path.write_text(ROUTE)
    api.ok("create", "-f", str(path))
    path.write_text(ROUTE.replace("web.example.com", "www.example.com"))
    refused = ssa(api, path)
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "error: Apply failed with 1 conflict: conflict with "
        '"before-first-apply" using route.openshift.io/v1: .spec.host\n'
    )
    path.write_text(ROUTE)  # the same values: shared, no conflict
    assert ssa(api, path).returncode == 0
    fields = owners(shown(api, "route", "web"))
    assert set(fields) == {("kubectl", "Apply"), ("before-first-apply", "Update")}


def test_invalid_or_dry_run_apply_writes_nothing(api: APIServerProcess, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(ROUTE + "  path: /admin\n  tls: {termination: passthrough}\n")
    refused = ssa(api, bad)
    assert refused.returncode == 1
    assert "spec.path" in refused.stderr and "passthrough" in refused.stderr
    assert "NotFound" in api.kubectl("get", "route", "web").stderr
    good = tmp_path / "route.yaml"
    good.write_text(ROUTE)
    dry = ssa(api, good, "--dry-run=server")
    assert dry.returncode == 0, dry.stderr
    assert "NotFound" in api.kubectl("get", "route", "web").stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(ROUTE + "  colour: blue\n")
    strict = ssa(api, unknown)
    assert strict.returncode == 1
    assert 'unknown field "spec.colour"' in strict.stderr
    assert "NotFound" in api.kubectl("get", "route", "web").stderr


@pytest.fixture
def kube(api: APIServerProcess) -> Iterator[client.ApiClient]:
    with config.new_client_from_config(config_file=str(api.kubeconfig)) as api_client:
        yield api_client


def service(target_port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80, "targetPort": target_port}]},
    }


def test_python_client_applies_a_service(kube: client.ApiClient) -> None:
    core = client.CoreV1Api(kube)
    made = core.patch_namespaced_service(
        "web", "default", service(8080), field_manager="deployer", _content_type=APPLY
    )
    assert made.spec.ports[0].target_port == 8080
    assert [(e.manager, e.operation) for e in made.metadata.managed_fields] == [
        ("deployer", "Apply")
    ]
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_service(
            "web", "default", service(8081), field_manager="intruder", _content_type=APPLY
        )
    assert err.value.status == 409
    body = json.loads(err.value.body)
    assert body["reason"] == "Conflict"
    assert body["details"]["causes"] == [
        {
            "type": "FieldManagerConflict",
            "message": 'conflict with "deployer"',
            "field": '.spec.ports[port=80,protocol="TCP"].targetPort',
        }
    ]
    taken = core.patch_namespaced_service(
        "web", "default", service(8081), field_manager="intruder", force=True, _content_type=APPLY
    )
    assert taken.spec.ports[0].target_port == 8081
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_service("web", "default", service(8082), _content_type=APPLY)
    assert err.value.status == 422
    assert "fieldManager: Required value: is required for apply patch" in err.value.body


def test_kubectl_moves_from_client_side_to_server_side_apply(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "route.yaml"
    path.write_text(ROUTE)
    api.ok("apply", "-f", str(path))  # client-side: the last-applied annotation
    path.write_text(ROUTE.replace("web.example.com", "www.example.com"))
    # another manager is forgiven nothing
    assert ssa(api, path, "--field-manager=other").returncode == 1
    moved = ssa(api, path)  # kubectl takes over what its client-side apply set
    assert moved.returncode == 0, moved.stderr
    route = shown(api, "route", "web")
    assert route["spec"]["host"] == "www.example.com"
    assert "f:host" in owners(route)[("kubectl", "Apply")]["f:spec"]
    last = route["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(last)["spec"]["host"] == "www.example.com"
    # and back to client-side apply, which diffs against that annotation
    path.write_text(ROUTE.replace("web.example.com", "shop.example.com"))
    assert api.ok("apply", "-f", str(path)).strip() == "route.route.openshift.io/web configured"
    assert shown(api, "route", "web")["spec"]["host"] == "shop.example.com"


def test_kubectl_is_not_forgiven_a_field_changed_since_its_client_side_apply(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "route.yaml"
    path.write_text(ROUTE)
    api.ok("apply", "-f", str(path))
    api.ok("patch", "route", "web", "--type=merge", "-p", '{"spec":{"host":"b.example.com"}}')
    path.write_text(ROUTE.replace("web.example.com", "c.example.com"))
    refused = ssa(api, path)
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "error: Apply failed with 1 conflict: conflict with "
        '"before-first-apply" using route.openshift.io/v1: .spec.host\n'
    )


def test_apply_options_refused_as_upstream_refuses_them(kube: client.ApiClient) -> None:
    core = client.CoreV1Api(kube)
    core.patch_namespaced_service(
        "web", "default", service(8080), field_manager="deployer", _content_type=APPLY
    )
    with pytest.raises(ApiException) as err:  # force is for apply only
        core.patch_namespaced_service(
            "web",
            "default",
            {"spec": {"ports": [{"port": 80, "targetPort": 9}]}},
            force=True,
            _content_type="application/merge-patch+json",
        )
    assert err.value.status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in err.value.body
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_service(
            "web", "default", service(8080), field_manager="x" * 129, _content_type=APPLY
        )
    assert err.value.status == 422
    assert "fieldManager: Too long" in err.value.body
    with pytest.raises(ApiException) as err:  # the status subresource is not applied to
        core.patch_namespaced_service_status(
            "web", "default", service(8080), field_manager="deployer", _content_type=APPLY
        )
    assert err.value.status == 415
    assert core.read_namespaced_service("web", "default").spec.ports[0].target_port == 8080


def test_managed_fields_an_update_sent_with_keys_the_server_cannot_read(
    kube: client.ApiClient,
) -> None:
    """An update may send any managedFields; an unreadable list key in them is dropped,
    and a later apply by that manager still answers (it was a 500)."""
    core = client.CoreV1Api(kube)
    made = core.patch_namespaced_service(
        "web", "default", service(8080), field_manager="deployer", _content_type=APPLY
    )
    body = kube.sanitize_for_serialization(made)
    entry = body["metadata"]["managedFields"][0]
    entry["fieldsV1"]["f:spec"]["f:ports"]["k:bad"] = {}
    core.replace_namespaced_service("web", "default", body)
    again = core.patch_namespaced_service(
        "web", "default", service(8081), field_manager="deployer", _content_type=APPLY
    )
    assert again.spec.ports[0].target_port == 8081
    assert ["k:bad" in json.dumps(e.fields_v1) for e in again.metadata.managed_fields] == [False]


def entry(**fields: Any) -> dict[str, Any]:
    return {
        "manager": "deployer",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {}},
        **fields,
    }


def refused(call: Any) -> dict[str, Any]:
    with pytest.raises(ApiException) as err:
        call()
    assert err.value.status == 422
    found: dict[str, Any] = json.loads(err.value.body)
    return found


def test_managed_fields_sent_by_a_client_are_checked_as_upstream(
    kube: client.ApiClient,
) -> None:
    """A create, an update and a patch sending managedFields kube-apiserver refuses get
    its 422 naming ``metadata.managedFields[i].<field>``, and write nothing."""
    core = client.CoreV1Api(kube)
    body = {**service(8080), "metadata": {"name": "web", "managedFields": [entry()]}}
    body["metadata"]["managedFields"] = [entry(operation="Bogus", fieldsType="FieldsV2")]
    status = refused(lambda: core.create_namespaced_service("default", body))
    assert status["message"] == (
        'Service "web" is invalid: ['
        'metadata.managedFields[0].operation: Invalid value: "Bogus": must be `Apply` or `Update`, '
        'metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`]'
    )
    assert [c["field"] for c in status["details"]["causes"]] == [
        "metadata.managedFields[0].operation",
        "metadata.managedFields[0].fieldsType",
    ]
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_service("web", "default")
    assert gone.value.status == 404

    made = core.patch_namespaced_service(
        "web", "default", service(8080), field_manager="deployer", _content_type=APPLY
    )
    sent = kube.sanitize_for_serialization(made)
    sent["metadata"]["managedFields"].append(entry(manager="m" * 129))
    sent["spec"]["ports"][0]["targetPort"] = 8081
    status = refused(lambda: core.replace_namespaced_service("web", "default", sent))
    assert status["message"] == (
        'Service "web" is invalid: metadata.managedFields[1].manager: '
        "Too long: may not be more than 128 bytes"
    )
    patch = {"metadata": {"managedFields": [entry(manager="ci\u200b", subresource="s" * 257)]}}
    status = refused(lambda: core.patch_namespaced_service("web", "default", patch))
    assert status["message"] == (
        'Service "web" is invalid: ['
        'metadata.managedFields[0].manager: Invalid value: "ci\\u200b": '
        "invalid character U+200B (at position 2), "
        "metadata.managedFields[0].subresource: Too long: may not be more than 256 bytes]"
    )
    after = core.read_namespaced_service("web", "default")
    assert after.spec.ports[0].target_port == 8080
    assert after.metadata.resource_version == made.metadata.resource_version
    assert [(e.manager, e.operation) for e in after.metadata.managed_fields] == [
        ("deployer", "Apply")
    ]
