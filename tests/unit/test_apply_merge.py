"""apply's merge: the manifest's spec and labels on the stored identity, status and allocations."""

from __future__ import annotations

import pytest

from shiftnet.api import Service
from shiftnet.api.apply_merge import for_create, merged_for_update
from shiftnet.errors import InvalidObject


def service(cluster_ip: str | None = None, port: int = 80, **meta: object) -> Service:
    spec: dict[str, object] = {"ports": [{"port": port}], "selector": {"app": "web"}}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    return Service.model_validate(
        {"metadata": {"name": "web", "namespace": "default", **meta}, "spec": spec}
    )


STORED = dict(
    uid="u-1", resourceVersion="7", generation=2, creationTimestamp="2026-01-01T00:00:00Z"
)


def test_unchanged_manifest_merges_to_the_stored_object() -> None:
    stored = service("127.30.0.5", **STORED)
    stored.status.load_balancer.ingress = [{"ip": "1.2.3.4"}]
    merged = merged_for_update(stored, service())
    assert merged.to_dict() == stored.to_dict()  # clusterIP, identity and status kept


def test_changed_spec_and_labels_are_taken_from_the_manifest() -> None:
    stored = service("127.30.0.5", labels={"old": "x"}, **STORED)
    merged = merged_for_update(stored, service(port=81, labels={"new": "y"}))
    assert merged.spec.ports[0].port == 81
    assert merged.metadata.labels == {"new": "y"}
    assert merged.spec.cluster_ip == "127.30.0.5"
    assert merged.metadata.resource_version == "7" and merged.metadata.uid == "u-1"


def test_cluster_ip_is_immutable() -> None:
    with pytest.raises(
        InvalidObject, match=r'spec.clusterIP: Invalid value: "127.30.0.6": field is immutable'
    ):
        merged_for_update(service("127.30.0.5", **STORED), service("127.30.0.6"))


def test_for_create_drops_server_fields() -> None:
    created = for_create(service(**STORED)).to_dict()["metadata"]
    assert {k: v for k, v in created.items() if v} == {"name": "web", "namespace": "default"}


def test_node_ports_kept_while_the_type_has_them_and_dropped_with_it() -> None:
    def typed(kind: str, node_port: int | None = None, port: int = 80) -> Service:
        svc = service("127.30.0.5", port=port, **STORED)
        svc.spec.type = kind
        svc.spec.ports[0].node_port = node_port
        return svc

    stored = typed("NodePort", 30080)
    assert merged_for_update(stored, typed("NodePort")).spec.ports[0].node_port == 30080
    assert merged_for_update(stored, typed("LoadBalancer")).spec.ports[0].node_port == 30080
    assert merged_for_update(stored, typed("NodePort", 30099)).spec.ports[0].node_port == 30099
    assert merged_for_update(stored, typed("NodePort", port=81)).spec.ports[0].node_port is None
    assert merged_for_update(stored, typed("ClusterIP")).spec.ports[0].node_port is None
