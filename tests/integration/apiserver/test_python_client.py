"""The official ``kubernetes`` Python client against a running ``shiftnet apiserver``."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

GROUP, VERSION = "route.openshift.io", "v1"


@pytest.fixture
def kube(api: APIServerProcess) -> Iterator[client.ApiClient]:
    with config.new_client_from_config(config_file=str(api.kubeconfig)) as api_client:
        yield api_client


def route(name: str, host: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Route",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"host": host, "to": {"kind": "Service", "name": "web"}},
    }


def test_routes_through_custom_objects_api(kube: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(kube)
    made = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", "routes", route("web", "web.example.com")
    )
    assert made["metadata"]["resourceVersion"]
    listed = custom.list_namespaced_custom_object(
        GROUP, VERSION, "default", "routes", label_selector="app=web"
    )
    assert [r["spec"]["host"] for r in listed["items"]] == ["web.example.com"]
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", "routes", "web", {"spec": {"host": "www.example.com"}}
    )
    assert patched["spec"]["host"] == "www.example.com"
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            "routes",
            {
                **route("bad", "bad.example.com"),
                "spec": {
                    "host": "bad.example.com",
                    "path": "/x",
                    "to": {"kind": "Service", "name": "web"},
                    "tls": {"termination": "passthrough"},
                },
            },
        )
    assert err.value.status == 422 and "spec.path" in str(err.value.body)


def test_services_through_core_v1_api(kube: client.ApiClient) -> None:
    core = client.CoreV1Api(kube)
    svc = client.V1Service(
        metadata=client.V1ObjectMeta(name="web", labels={"app": "web"}),
        spec=client.V1ServiceSpec(
            selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port=8080)]
        ),
    )
    made = core.create_namespaced_service("default", svc)
    assert made.metadata.name == "web" and made.metadata.uid
    listed = core.list_namespaced_service("default", label_selector="app=web")
    assert [s.metadata.name for s in listed.items] == ["web"]
    patched = core.patch_namespaced_service(
        "web", "default", {"metadata": {"labels": {"tier": "front"}}}
    )
    assert patched.metadata.labels == {"app": "web", "tier": "front"}
    with pytest.raises(ApiException) as err:
        core.read_namespaced_service("nope", "default")
    assert err.value.status == 404
    core.delete_namespaced_service("web", "default")
    assert core.list_namespaced_service("default").items == []


def test_watch_streams_routes_and_services(kube: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    seen: list[tuple[str, str]] = []
    services: list[tuple[str, str]] = []

    def watch_routes() -> None:
        w = watch.Watch()
        for ev in w.stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            "default",
            "routes",
            timeout_seconds=3,
        ):
            seen.append((ev["type"], ev["object"]["metadata"]["name"]))

    def watch_services() -> None:
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_service, "default", timeout_seconds=3):
            services.append((ev["type"], ev["object"].metadata.name))

    threads = [threading.Thread(target=watch_routes), threading.Thread(target=watch_services)]
    for t in threads:
        t.start()
    import time

    time.sleep(0.5)
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", "routes", route("one", "one.example.com")
    )
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", "routes", "one")
    core.create_namespaced_service(
        "default",
        client.V1Service(
            metadata=client.V1ObjectMeta(name="s1"),
            spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]),
        ),
    )
    for t in threads:
        t.join(timeout=20)
    assert seen == [("ADDED", "one"), ("DELETED", "one")]
    assert services == [("ADDED", "s1")]
