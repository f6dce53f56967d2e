"""The pure parts of the ``kube`` store: URLs, resource coordinates, Status answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from shiftnet.errors import (
    AlreadyExists,
    ConfigError,
    Conflict,
    Expired,
    InvalidObject,
    NotFound,
    StoreUnavailable,
)
from shiftnet.store.kube_resources import parse_kube_url, resource_for
from shiftnet.store.kube_status import Call, error_for

CALL = Call("update", "routes.route.openshift.io", "shop", "web", "https://127.0.0.1:6443")


def test_urls_name_a_kubeconfig_and_maybe_a_context() -> None:
    assert parse_kube_url("kube:///etc/k.yaml", {}).kubeconfig == Path("/etc/k.yaml")
    assert parse_kube_url("kube://rel/k", {}).kubeconfig == Path("rel/k")
    env = {"KUBECONFIG": "/a/one:/b/two"}
    assert parse_kube_url("kube://", env).kubeconfig == Path("/a/one")
    assert parse_kube_url("kube://", {}).kubeconfig == Path("~/.kube/config").expanduser()
    target = parse_kube_url("kube:///k?context=prod", {})
    assert (target.kubeconfig, target.context) == (Path("/k"), "prod")
    with pytest.raises(ConfigError, match=r"the only option is \?context=NAME"):
        parse_kube_url("kube:///k?user=x", {})


def test_resources_have_their_group_version_and_scope() -> None:
    route = resource_for("routes")
    assert (route.group, route.version, route.namespaced, route.core) == (
        "route.openshift.io",
        "v1",
        True,
        False,
    )
    assert route.qualified == "routes.route.openshift.io"
    node = resource_for("nodes")
    assert (node.core, node.namespaced, node.core_name) == (True, False, "node")
    assert resource_for("endpoints").core_name == "endpoints"
    assert not resource_for("hostsubnets").namespaced
    with pytest.raises(ConfigError, match='cannot hold "things"'):
        resource_for("things")


def test_status_answers_become_the_stores_errors() -> None:
    assert isinstance(error_for(404, {"reason": "NotFound"}, CALL), NotFound)
    assert isinstance(error_for(409, {"reason": "AlreadyExists"}, CALL), AlreadyExists)
    assert isinstance(error_for(409, {"reason": "Conflict"}, CALL), Conflict)
    expired = error_for(410, {"reason": "Expired"}, CALL, revision=7)
    assert isinstance(expired, Expired) and expired.revision == 7
    invalid = error_for(
        422,
        {
            "reason": "Invalid",
            "message": "...",
            "details": {
                "kind": "Route",
                "causes": [{"field": "spec.path", "message": "Invalid value: passthrough"}],
            },
        },
        CALL,
    )
    assert isinstance(invalid, InvalidObject) and invalid.field == "spec.path"
    refused = error_for(403, {"reason": "Forbidden", "message": "no\n  access"}, CALL)
    assert isinstance(refused, StoreUnavailable)
    assert str(refused) == (
        "the API server at https://127.0.0.1:6443 refused update routes.route.openshift.io "
        "shop/web (HTTP 403 Forbidden): no access"
    )
    broken = error_for(500, b"", CALL)
    assert str(broken).endswith("failed update routes.route.openshift.io shop/web: HTTP 500")


def test_request_paths_name_group_version_scope_and_object() -> None:
    from shiftnet.store.kube_rest import collection_path, object_path

    routes, pods = resource_for("routes"), resource_for("pods")
    nodes, subnets = resource_for("nodes"), resource_for("hostsubnets")
    assert collection_path(routes, "web") == "/apis/route.openshift.io/v1/namespaces/web/routes"
    assert collection_path(pods, "web") == "/api/v1/namespaces/web/pods"
    assert object_path(nodes, None, "n1") == "/api/v1/nodes/n1"
    # a cluster-scoped kind ignores a namespace it is given
    assert object_path(subnets, "x", "n1") == "/apis/network.openshift.io/v1/hostsubnets/n1"
    # every path segment is quoted, as the library quotes path parameters
    assert object_path(pods, "a b", "c/d") == "/api/v1/namespaces/a%20b/pods/c%2Fd"
