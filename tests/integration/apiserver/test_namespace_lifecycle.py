"""NamespaceLifecycle through a running ``shiftnet apiserver``: the real kubectl and the
official Python client may create only in a namespace that exists and is not being
terminated; ``default`` always exists; nothing is written when a create is refused."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from tests.support.apiserver import APIServerProcess

from shiftnet.store import open_store

pytestmark = pytest.mark.integration

GROUP, VERSION = "route.openshift.io", "v1"


@pytest.fixture
def kube(api: APIServerProcess) -> Iterator[client.ApiClient]:
    with config.new_client_from_config(config_file=str(api.kubeconfig)) as api_client:
        yield api_client


def stored_count(api: APIServerProcess, resource: str) -> int:
    """Rows of ``resource`` in the server's own SQLite file (what a refused create left)."""
    path = api.store.removeprefix("sqlite://")
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT COUNT(*) FROM objects WHERE resource=?", (resource,)).fetchone()
    return int(row[0])


def route(name: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Route",
        "metadata": {"name": name},
        "spec": {"host": f"{name}.example.com", "to": {"kind": "Service", "name": "web"}},
    }


def test_kubectl_create_in_a_missing_namespace_is_not_found(api: APIServerProcess) -> None:
    res = api.kubectl("create", "service", "clusterip", "x", "--tcp=80", "-n", "nope")
    assert res.returncode != 0
    assert res.stderr == (
        'error: failed to create ClusterIP service: namespaces "nope" not found\n'
    )
    lone = json.dumps({**route("web"), "metadata": {"name": "web", "namespace": "nope"}})
    res = api.kubectl("apply", "-f", "-", input=lone)
    assert res.returncode != 0
    assert (
        'Error from server (NotFound): error when creating "STDIN": namespaces "nope" not found'
        in res.stderr
    )
    assert stored_count(api, "services") == stored_count(api, "routes") == 0
    # default exists without any Namespace object
    api.ok("create", "service", "clusterip", "x", "--tcp=80", "-n", "default")
    # a manifest with its Namespace first applies in one go
    manifest = yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
            {**route("web"), "metadata": {"name": "web", "namespace": "shop"}},
        ]
    )
    out = api.ok("apply", "-f", "-", input=manifest)
    assert "namespace/shop created" in out and "route.route.openshift.io/web created" in out
    api.ok("create", "service", "clusterip", "x", "--tcp=80", "-n", "shop")
    # once the namespace is gone, creating in it is refused again
    api.ok("delete", "namespace", "shop")
    res = api.kubectl("create", "service", "clusterip", "y", "--tcp=80", "-n", "shop")
    assert res.returncode != 0 and 'namespaces "shop" not found' in res.stderr
    assert stored_count(api, "services") == 2


def test_python_client_status_for_missing_and_terminating(
    api: APIServerProcess, kube: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, "nope", "routes", route("web"))
    status = json.loads(err.value.body)
    assert err.value.status == 404
    assert status["kind"] == "Status" and status["reason"] == "NotFound"
    assert status["message"] == 'namespaces "nope" not found'
    assert status["details"] == {"name": "nope", "kind": "namespaces"}
    # dry run is admitted the same way, and writes nothing either way
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, "nope", "routes", route("web"), dry_run="All"
        )
    assert err.value.status == 404

    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old"}})
    custom.create_namespaced_custom_object(GROUP, VERSION, "old", "routes", route("before"))
    ns = core.read_namespace("old")
    ns.status.phase = "Terminating"
    core.replace_namespace_status("old", ns)
    # written through this server: counts at once
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, "old", "routes", route("web"))
    status = json.loads(err.value.body)
    assert err.value.status == 403 and status["reason"] == "Forbidden"
    assert status["message"] == (
        'routes.route.openshift.io "web" is forbidden: unable to create new content in '
        "namespace old because it is being terminated"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace old is being terminated",
            "field": "metadata.namespace",
        }
    ]
    # objects already there are still read, changed and deleted
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "old", "routes", "before", {"metadata": {"labels": {"a": "b"}}}
    )
    custom.delete_namespaced_custom_object(GROUP, VERSION, "old", "routes", "before")
    assert stored_count(api, "routes") == 0
    # cluster-scoped kinds have no namespace to check
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}})
    custom.create_namespaced_custom_object(GROUP, VERSION, "new", "routes", route("web"))
    assert stored_count(api, "routes") == 1


def test_a_namespace_deleted_behind_the_servers_back_counts_within_a_second(
    api: APIServerProcess, kube: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(kube)
    api.ok("create", "namespace", "side")
    custom.create_namespaced_custom_object(GROUP, VERSION, "side", "routes", route("a"))

    async def delete_in_store() -> None:  # as `shiftnet delete ns side` on the store does
        store = open_store(api.store)
        try:
            await store.delete("namespaces", None, "side")
        finally:
            await store.close()

    asyncio.run(delete_in_store())
    deadline = time.monotonic() + 5  # FRESH_FOR is 1 s
    refused = None
    while refused is None and time.monotonic() < deadline:
        try:
            custom.create_namespaced_custom_object(
                GROUP, VERSION, "side", "routes", route("probe"), dry_run="All"
            )
        except ApiException as err:
            refused = err
        time.sleep(0.1)
    assert refused is not None and refused.status == 404
    assert json.loads(refused.body)["message"] == 'namespaces "side" not found'
