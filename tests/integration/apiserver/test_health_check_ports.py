"""The API server refuses ``spec.healthCheckNodePort`` requests the master cannot honour, in
kube-apiserver's words, before anything is written: taken (by a node port or another health
check), out of the recorded range, or changed while held."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator

import httpx
import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

SERVICES = "/api/v1/namespaces/default/services"


@pytest.fixture
def http(api: APIServerProcess) -> Iterator[httpx.Client]:
    ctx = ssl.create_default_context(cafile=api.ca)
    with httpx.Client(
        base_url=api.url,
        verify=ctx,
        timeout=30,
        headers={"Authorization": f"Bearer {api.token}"},
    ) as client:
        yield client


def local_lb(name: str, hc: int | None = None, node_port: int | None = None) -> dict[str, object]:
    port: dict[str, object] = {"port": 80}
    if node_port is not None:
        port["nodePort"] = node_port
    spec: dict[str, object] = {
        "type": "LoadBalancer",
        "externalTrafficPolicy": "Local",
        "ports": [port],
    }
    if hc is not None:
        spec["healthCheckNodePort"] = hc
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def test_health_check_port_taken_out_of_range_and_changed_are_422(
    api: APIServerProcess, http: httpx.Client
) -> None:
    network = {
        "apiVersion": "network.openshift.io/v1",
        "kind": "ClusterNetwork",
        "metadata": {
            "name": "default",
            "annotations": {"shiftnet.io/service-node-port-range": "30000-30009"},
        },
        "clusterNetworks": [{"CIDR": "127.10.0.0/16", "hostSubnetLength": 8}],
        "serviceNetwork": "127.30.0.0/16",
    }
    http.post("/apis/network.openshift.io/v1/clusternetworks", json=network).raise_for_status()
    http.post(SERVICES, json=local_lb("first", hc=30005, node_port=30000)).raise_for_status()

    taken = http.post(SERVICES, json=local_lb("second", hc=30005))
    assert taken.status_code == 422, taken.text
    assert taken.json()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "field": "spec.healthCheckNodePort",
            "message": "Invalid value: 30005: failed to allocate requested HealthCheck "
            "NodePort 30005: provided port is already allocated",
        }
    ]
    on_a_node_port = http.post(SERVICES, json=local_lb("third", hc=30000))
    assert on_a_node_port.status_code == 422
    assert "provided port is already allocated" in on_a_node_port.text
    node_port_on_it = http.post(SERVICES, json=local_lb("fourth", node_port=30005))
    assert node_port_on_it.status_code == 422
    assert node_port_on_it.json()["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
    outside = http.post(SERVICES, json=local_lb("fifth", hc=80))
    assert outside.status_code == 422
    assert outside.json()["message"] == (
        'Service "fifth" is invalid: spec.healthCheckNodePort: Invalid value: 80: failed to '
        "allocate requested HealthCheck NodePort 80: provided port is not in the valid range. "
        "The range of valid ports is 30000-30009"
    )

    # held: the same value (or none) is fine, another one is refused
    stored = http.get(f"{SERVICES}/first").json()
    stored["spec"]["healthCheckNodePort"] = 30006
    changed = http.put(f"{SERVICES}/first", json=stored)
    assert changed.status_code == 422
    assert changed.json()["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "field": "spec.healthCheckNodePort",
            "message": "Forbidden: field is immutable",
        }
    ]
    stored["spec"]["healthCheckNodePort"] = 30005
    stored["metadata"]["labels"] = {"kept": "yes"}
    http.put(f"{SERVICES}/first", json=stored).raise_for_status()

    res = api.kubectl("create", "-f", "-", input=json.dumps(local_lb("k", hc=30005)))
    assert res.returncode != 0
    assert (
        'The Service "k" is invalid: spec.healthCheckNodePort: Invalid value: 30005: failed to '
        "allocate requested HealthCheck NodePort 30005: provided port is already allocated"
        in res.stderr
    ), res.stderr
    names = [s["metadata"]["name"] for s in http.get(SERVICES).json()["items"]]
    assert names == ["first"]
