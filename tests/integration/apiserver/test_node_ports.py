"""The API server refuses node port requests the master cannot honour, in kube-apiserver's
words, before anything is written (the range is the one the master recorded)."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

SERVICES = "/api/v1/namespaces/default/services"


def node_port_service(name: str, node_port: int | None) -> dict[str, object]:
    port: dict[str, object] = {"port": 80}
    if node_port is not None:
        port["nodePort"] = node_port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": "NodePort", "ports": [port]},
    }


def test_node_port_taken_out_of_range_and_full_are_422(
    api: APIServerProcess, http: httpx.Client
) -> None:
    network = {
        "apiVersion": "network.openshift.io/v1",
        "kind": "ClusterNetwork",
        "metadata": {
            "name": "default",
            "annotations": {"shiftnet.io/service-node-port-range": "30000-30001"},
        },
        "clusterNetworks": [{"CIDR": "127.10.0.0/16", "hostSubnetLength": 8}],
        "serviceNetwork": "127.30.0.0/16",
    }
    http.post("/apis/network.openshift.io/v1/clusternetworks", json=network).raise_for_status()
    http.post(SERVICES, json=node_port_service("first", 30000)).raise_for_status()
    taken = http.post(SERVICES, json=node_port_service("second", 30000))
    assert taken.status_code == 422, taken.text
    assert taken.json()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "field": "spec.ports[0].nodePort",
            "message": "Invalid value: 30000: provided port is already allocated",
        }
    ]
    outside = http.post(SERVICES, json=node_port_service("third", 80))
    assert outside.status_code == 422
    assert outside.json()["message"] == (
        'Service "third" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided '
        "port is not in the valid range. The range of valid ports is 30000-30001"
    )
    http.post(SERVICES, json=node_port_service("last", 30001)).raise_for_status()
    full = http.post(SERVICES, json=node_port_service("none-left", None))
    assert full.status_code == 422 and "range is full" in full.json()["message"], full.text
    res = api.kubectl("create", "-f", "-", input=json.dumps(node_port_service("k", 30000)))
    assert res.returncode != 0
    assert (
        'The Service "k" is invalid: spec.ports[0].nodePort: Invalid value: 30000: provided '
        "port is already allocated" in res.stderr
    ), res.stderr
    names = [s["metadata"]["name"] for s in http.get(SERVICES).json()["items"]]
    assert sorted(names) == ["first", "last"]
