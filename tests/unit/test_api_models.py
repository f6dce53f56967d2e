"""Resource models: upstream defaults, the wire shape, round trips, and strict parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from shiftnet.api import (
    KINDS,
    ClusterNetwork,
    Endpoints,
    HostSubnet,
    Namespace,
    Node,
    Pod,
    Route,
    Service,
    kind_for_name,
    parse_object,
)
from shiftnet.errors import InvalidInput, InvalidObject

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def route(spec: dict[str, Any], api_version: str = "route.openshift.io/v1") -> Route:
    raw = {"apiVersion": api_version, "kind": "Route", "metadata": {"name": "web"}, "spec": spec}
    obj = parse_object(raw)
    assert isinstance(obj, Route)
    return obj


def service(spec: dict[str, Any]) -> Service:
    obj = parse_object(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}
    )
    assert isinstance(obj, Service)
    return obj


# ---------------------------------------------------------------- defaults


def test_route_defaults() -> None:
    r = route({"to": {"name": "web"}})
    assert r.spec.to.kind == "Service"
    assert r.spec.to.weight == 100
    assert r.spec.wildcard_policy == "None"
    assert (r.spec.host, r.spec.path, r.spec.tls, r.spec.port) == ("", "", None, None)
    wire = r.to_dict()["spec"]
    assert wire["to"] == {"kind": "Service", "name": "web", "weight": 100}
    assert wire["wildcardPolicy"] == "None"


def test_alternate_backends_get_the_same_defaults() -> None:
    r = route(
        {"to": {"name": "a"}, "alternateBackends": [{"name": "b"}, {"name": "c", "weight": 0}]}
    )
    assert [(b.kind, b.name, b.weight) for b in r.backends()] == [
        ("Service", "a", 100),
        ("Service", "b", 100),
        ("Service", "c", 0),
    ]


def test_empty_backend_kind_defaults_to_service() -> None:
    assert route({"to": {"kind": "", "name": "web"}}).spec.to.kind == "Service"


def test_route_termination_property() -> None:
    assert route({"to": {"name": "a"}}).termination is None
    assert route({"to": {"name": "a"}, "tls": {"termination": "edge"}}).termination == "edge"


def test_service_defaults() -> None:
    s = service({"ports": [{"port": 80}]})
    assert s.spec.type == "ClusterIP"
    assert s.spec.session_affinity == "None"
    assert s.spec.session_affinity_config is None
    assert s.spec.affinity_timeout == 10800
    assert s.spec.ports[0].protocol == "TCP"
    assert s.spec.ports[0].effective_target_port == 80  # targetPort defaults to port
    assert not s.spec.headless


def test_client_ip_affinity_gets_the_upstream_timeout() -> None:
    s = service({"ports": [{"port": 80}], "sessionAffinity": "ClientIP"})
    assert s.spec.affinity_timeout == 10800
    assert s.to_dict()["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_client_ip_affinity_keeps_a_given_timeout() -> None:
    s = service(
        {
            "ports": [{"port": 80}],
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}},
        }
    )
    assert s.spec.affinity_timeout == 60


def test_headless_and_named_target_port() -> None:
    s = service({"clusterIP": "None", "ports": [{"port": 80, "targetPort": "http"}]})
    assert s.spec.headless
    assert s.spec.ports[0].effective_target_port == "http"


def test_pod_defaults() -> None:
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "readinessProbe": {"tcpSocket": {"port": 80}}}]},
    }
    p = parse_object(raw)
    assert isinstance(p, Pod)
    assert p.spec.restart_policy == "Always"
    assert p.status.phase == "Pending"
    probe = p.spec.containers[0].readiness_probe
    assert probe is not None
    assert (probe.period_seconds, probe.timeout_seconds) == (10, 1)
    assert (probe.success_threshold, probe.failure_threshold) == (1, 3)
    assert not p.ready


@pytest.mark.parametrize("cls", KINDS, ids=[k.KIND for k in KINDS])
def test_api_version_and_kind_are_filled(cls: type) -> None:
    extra: dict[str, Any] = {"spec": {"to": {"name": "x"}}} if cls is Route else {}
    obj = cls(**extra) if not extra else cls.model_validate(extra)
    assert obj.kind == cls.KIND
    assert obj.api_version == cls.API_VERSION


def test_kind_metadata() -> None:
    assert (Route.API_VERSION, Route.RESOURCE, Route.NAMESPACED) == (
        "route.openshift.io/v1",
        "routes",
        True,
    )
    assert (HostSubnet.API_VERSION, HostSubnet.NAMESPACED) == ("network.openshift.io/v1", False)
    assert (ClusterNetwork.RESOURCE, ClusterNetwork.NAMESPACED) == ("clusternetworks", False)
    assert not Namespace.NAMESPACED and not Node.NAMESPACED
    assert Endpoints.RESOURCE == "endpoints"


# ---------------------------------------------------------------- wire shape


def test_wire_names_follow_kubernetes_spelling() -> None:
    s = service({"clusterIP": "127.30.0.1", "externalIPs": ["1.2.3.4"], "ports": [{"port": 80}]})
    spec = s.to_dict()["spec"]
    assert spec["clusterIP"] == "127.30.0.1"
    assert spec["externalIPs"] == ["1.2.3.4"]
    hs = parse_object(
        {
            "apiVersion": "network.openshift.io/v1",
            "kind": "HostSubnet",
            "metadata": {"name": "n1"},
            "host": "n1",
            "hostIP": "10.0.0.1",
            "subnet": "10.1.0.0/24",
        }
    )
    assert hs.to_dict()["hostIP"] == "10.0.0.1"
    cn = parse_object(
        {
            "apiVersion": "network.openshift.io/v1",
            "kind": "ClusterNetwork",
            "metadata": {"name": "default"},
            "clusterNetworks": [{"CIDR": "10.1.0.0/16", "hostSubnetLength": 8}],
        }
    )
    assert cn.to_dict()["clusterNetworks"] == [{"CIDR": "10.1.0.0/16", "hostSubnetLength": 8}]


def test_wire_shape_has_no_nulls() -> None:
    def walk(value: Any) -> None:
        assert value is not None
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(route({"to": {"name": "a"}}).to_dict())
    walk(service({"ports": [{"port": 80}]}).to_dict())


def manifests() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc:
                out.append((f"{path.relative_to(EXAMPLES)}#{i}", doc))
    return out


MANIFESTS = manifests()


def test_there_are_example_manifests() -> None:
    kinds = {doc["kind"] for _, doc in MANIFESTS}
    assert {"Route", "Service", "Endpoints", "Namespace", "Pod"} <= kinds


@pytest.mark.parametrize(("where", "doc"), MANIFESTS, ids=[w for w, _ in MANIFESTS])
def test_round_trip(where: str, doc: dict[str, Any]) -> None:
    obj = parse_object(doc, source=where)
    wire = obj.to_dict()
    again = parse_object(wire)
    assert again == obj
    assert again.to_dict() == wire
    # everything the user wrote survives (defaults may be added, nothing lost)
    assert _contains(wire, {**doc, "apiVersion": obj.API_VERSION})


def _contains(big: Any, small: Any) -> bool:
    if isinstance(small, dict):
        return isinstance(big, dict) and all(
            k in big and _contains(big[k], v) for k, v in small.items()
        )
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(map(_contains, big, small))
    return bool(big == small)


def test_openshift3_route_api_version_is_accepted() -> None:
    r = route({"to": {"name": "a"}}, api_version="v1")
    assert r.api_version == "route.openshift.io/v1"


# ---------------------------------------------------------------- strict parsing


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (
            {
                "kind": "Route",
                "apiVersion": "v1",
                "metadata": {"name": "a"},
                "spec": {"to": {"name": "a"}, "tls": {"termination": "edge", "certficate": "x"}},
            },
            "spec.tls.certficate",
        ),
        (
            {
                "kind": "Route",
                "apiVersion": "v1",
                "metadata": {"name": "a", "lables": {}},
                "spec": {"to": {"name": "a"}},
            },
            "metadata.lables",
        ),
        (
            {
                "kind": "Route",
                "apiVersion": "v1",
                "metadata": {"name": "a"},
                "spec": {"to": {"name": "a", "wieght": 1}},
            },
            "spec.to.wieght",
        ),
        ({"kind": "Route", "apiVersion": "v1", "metadata": {"name": "a"}, "specs": {}}, "specs"),
        (
            {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {"name": "a"},
                "spec": {"containers": [{"name": "c", "imagee": "x"}]},
            },
            "spec.containers[0].imagee",
        ),
        (
            {
                "kind": "Endpoints",
                "apiVersion": "v1",
                "metadata": {"name": "a"},
                "subsets": [{"addresses": [{"ipp": "1.2.3.4"}]}],
            },
            "subsets[0].addresses[0].ipp",
        ),
        (
            {
                "kind": "Service",
                "apiVersion": "v1",
                "metadata": {"name": "a"},
                "spec": {"ports": [{"port": 80, "tragetPort": 8080}]},
            },
            "spec.ports[0].tragetPort",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_unknown_fields_are_rejected_naming_the_path(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidObject) as exc:
        parse_object(raw)
    assert exc.value.field == path
    assert exc.value.message == "unknown field"
    assert str(exc.value).endswith(f"is invalid: {path}: unknown field")


def test_missing_required_field() -> None:
    with pytest.raises(InvalidObject) as exc:
        parse_object({"kind": "Route", "apiVersion": "v1", "metadata": {"name": "a"}, "spec": {}})
    assert (exc.value.field, exc.value.message) == ("spec.to", "Required value")


def test_source_is_named_in_shape_errors() -> None:
    with pytest.raises(InvalidObject) as exc:
        parse_object(
            {"kind": "Route", "apiVersion": "v1", "metadata": {"name": "a"}}, source="web.yaml#0"
        )
    assert str(exc.value) == 'web.yaml#0: Route "a" is invalid: spec: Required value'
    assert (exc.value.field, exc.value.message) == ("spec", "Required value")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "expected an object with apiVersion and kind, got list"),
        ({"apiVersion": "v1"}, "object has no kind"),
        ({"apiVersion": "v1", "kind": "Deployment"}, 'unknown kind "Deployment"'),
        (
            {"apiVersion": "apps/v1", "kind": "Service"},
            'Service: apiVersion "apps/v1" is not served (use "v1")',
        ),
    ],
)
def test_documents_that_are_not_objects(raw: Any, message: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        parse_object(raw)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("svc", Service),
        ("services", Service),
        ("service", Service),
        ("ep", Endpoints),
        ("po", Pod),
        ("ns", Namespace),
        ("no", Node),
        ("route", Route),
        ("routes.route.openshift.io", Route),
        ("route.route.openshift.io", Route),
        ("hostsubnets", HostSubnet),
        ("clusternetwork", ClusterNetwork),
        ("Route", Route),
    ],
)
def test_kind_for_name(name: str, kind: type) -> None:
    assert kind_for_name(name) is kind


def test_unknown_resource_type() -> None:
    with pytest.raises(InvalidInput, match='unknown resource type "deployments"'):
        kind_for_name("deployments")
