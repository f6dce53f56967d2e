"""The API server refuses ``spec.healthCheckNodePort`` requests the master cannot honour, in
kube-apiserver's words, before anything is written: taken (by a node port or another health
check), out of the recorded range, or changed while held."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

SERVICES = "/api/v1/namespaces/default/services"


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


def manifest(typ: str, policy: str | None = None) -> str:
    spec: dict[str, object] = {"type": typ, "ports": [{"port": 80}]}
    if policy:
        spec["externalTrafficPolicy"] = policy
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w"}, "spec": spec}
    return json.dumps(body)


def test_kubectl_apply_back_to_cluster_or_clusterip_drops_what_the_master_gave(
    api: APIServerProcess, http: httpx.Client
) -> None:
    """kubectl apply's three-way merge keeps fields the manifest never set: the API drops
    the health check port and the node ports the master gave when the Service no longer
    has them, as kube-apiserver does, instead of refusing the change."""

    def spec() -> dict[str, object]:
        out: dict[str, object] = http.get(f"{SERVICES}/w").json()["spec"]
        return out

    def kubectl_apply(text: str) -> None:
        res = api.kubectl("apply", "-f", "-", input=text)
        assert res.returncode == 0, res.stderr

    kubectl_apply(manifest("LoadBalancer", "Local"))
    given = {"spec": {"healthCheckNodePort": 30500, "ports": [{"port": 80, "nodePort": 30600}]}}
    patched = api.kubectl("patch", "svc", "w", "-p", json.dumps(given))  # as the master does
    assert patched.returncode == 0, patched.stderr
    # a PUT that leaves the port out keeps it while the Service needs it
    stored = http.get(f"{SERVICES}/w").json()
    del stored["spec"]["healthCheckNodePort"]
    http.put(f"{SERVICES}/w", json=stored).raise_for_status()
    assert spec()["healthCheckNodePort"] == 30500
    kubectl_apply(manifest("LoadBalancer", "Cluster"))
    assert "healthCheckNodePort" not in spec()
    kubectl_apply(manifest("ClusterIP"))
    ports = http.get(f"{SERVICES}/w").json()["spec"]["ports"]
    assert [p.get("nodePort") for p in ports] == [None]
    # a value the user asks for on the wrong type is still refused
    wrong = api.kubectl(
        "patch", "svc", "w", "-p", json.dumps({"spec": {"healthCheckNodePort": 30501}})
    )
    assert wrong.returncode != 0 and "may only be set when" in wrong.stderr
