"""networking.k8s.io/v1 Ingress and IngressClass: shape, kube-apiserver's field errors, columns."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from shiftnet.api import Ingress, IngressClass, kind_for_name, parse_object
from shiftnet.api.columns import cells, columns_for
from shiftnet.api.validation import errors, update_errors, validate
from shiftnet.errors import InvalidInput, InvalidObject

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def raw(**spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "rules": [
                {
                    "host": "www.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "web", "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ]
        },
    }
    doc["spec"].update(spec)
    return doc


def ingress(doc: dict[str, Any]) -> Ingress:
    obj = parse_object(doc)
    assert isinstance(obj, Ingress)
    return obj


def with_path(**path: Any) -> dict[str, Any]:
    doc = raw()
    doc["spec"]["rules"][0]["http"]["paths"][0].update(path)
    return doc


def with_backend(backend: dict[str, Any]) -> dict[str, Any]:
    return with_path(backend=backend)


def first_error(doc: dict[str, Any]) -> str:
    found = errors(ingress(doc))
    assert found, "expected a problem"
    return str(found[0])


def test_every_name_kubectl_accepts() -> None:
    for name in ("ingresses", "ingress", "ing", "ingresses.networking.k8s.io"):
        assert kind_for_name(name) is Ingress
    assert kind_for_name("ingressclasses") is IngressClass
    assert kind_for_name("ingressclass") is IngressClass


def test_a_valid_ingress_has_no_errors_and_round_trips() -> None:
    doc = raw(tls=[{"hosts": ["www.example.com"], "secretName": "web-tls"}])
    obj = ingress(doc)
    assert errors(obj) == []
    spec = obj.to_dict()["spec"]
    assert spec["tls"] == doc["spec"]["tls"]
    assert spec["rules"][0]["http"]["paths"][0] == {
        "path": "/",
        "pathType": "Prefix",
        "backend": {"service": {"name": "web", "port": {"number": 80}}},
    }
    assert ingress(obj.to_dict()) == obj


def test_an_unknown_field_is_refused_naming_it() -> None:
    doc = with_path(pathtype="Prefix")
    with pytest.raises(InvalidObject, match=r"spec\.rules\[0\]\.http\.paths\[0\]\.pathtype"):
        parse_object(doc)


def test_an_old_api_version_is_not_served() -> None:
    doc = raw()
    doc["apiVersion"] = "extensions/v1beta1"
    with pytest.raises(InvalidInput, match=r"networking\.k8s\.io/v1"):
        parse_object(doc)


P = "spec.rules[0].http.paths[0]"

CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "neither rules nor default backend",
        raw(rules=[]),
        'spec: Invalid value: "[]": either `defaultBackend` or `rules` must be specified',
    ),
    (
        "host is an IP",
        raw(rules=[{"host": "10.0.0.1"}]),
        'spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
    ),
    (
        "host not a DNS name",
        raw(rules=[{"host": "Web.example.com"}]),
        'spec.rules[0].host: Invalid value: "Web.example.com": a lowercase RFC 1123 subdomain',
    ),
    (
        "bad wildcard",
        raw(rules=[{"host": "foo.*.example.com"}]),
        'spec.rules[0].host: Invalid value: "foo.*.example.com": a wildcard DNS-1123 subdomain',
    ),
    (
        "no paths",
        raw(rules=[{"host": "a.b", "http": {"paths": []}}]),
        "spec.rules[0].http.paths: Required value",
    ),
    (
        "no pathType",
        with_path(pathType=None),
        f"{P}.pathType: Required value: pathType must be specified",
    ),
    (
        "unknown pathType",
        with_path(pathType="Regex"),
        f'{P}.pathType: Unsupported value: "Regex": supported values: "Exact", '
        '"ImplementationSpecific", "Prefix"',
    ),
    (
        "relative Prefix",
        with_path(path="api"),
        f'{P}.path: Invalid value: "api": must be an absolute path',
    ),
    (
        "empty Exact",
        with_path(path="", pathType="Exact"),
        f'{P}.path: Invalid value: "": must be an absolute path',
    ),
    (
        "double slash",
        with_path(path="/a//b"),
        f"{P}.path: Invalid value: \"/a//b\": must not contain '//'",
    ),
    (
        "encoded slash",
        with_path(path="/a%2Fb"),
        f"{P}.path: Invalid value: \"/a%2Fb\": must not contain '%2F'",
    ),
    (
        "dot suffix",
        with_path(path="/a/."),
        f"{P}.path: Invalid value: \"/a/.\": cannot end with '/.'",
    ),
    (
        "relative ImplementationSpecific",
        with_path(path="api", pathType="ImplementationSpecific"),
        f'{P}.path: Invalid value: "api": must be an absolute path',
    ),
    (
        "no backend",
        with_backend({}),
        f'{P}.backend: Invalid value: "": resource or service backend is required',
    ),
    (
        "both backends",
        with_backend(
            {
                "service": {"name": "web", "port": {"number": 80}},
                "resource": {"kind": "B", "name": "b"},
            }
        ),
        f'{P}.backend: Invalid value: "": cannot set both resource and service backends',
    ),
    (
        "no service name",
        with_backend({"service": {"port": {"number": 80}}}),
        f"{P}.backend.service.name: Required value",
    ),
    (
        "service name not a DNS-1035 label",
        with_backend({"service": {"name": "1web", "port": {"number": 80}}}),
        f'{P}.backend.service.name: Invalid value: "1web": a DNS-1035 label',
    ),
    (
        "both port name and number",
        with_backend({"service": {"name": "web", "port": {"name": "http", "number": 80}}}),
        f'{P}.backend: Invalid value: "": cannot set both port name & port number',
    ),
    (
        "no port",
        with_backend({"service": {"name": "web"}}),
        f"{P}.backend: Required value: port name or number is required",
    ),
    (
        "port number out of range",
        with_backend({"service": {"name": "web", "port": {"number": 70000}}}),
        f"{P}.backend.service.port.number: Invalid value: 70000:",
    ),
    (
        "bad port name",
        with_backend({"service": {"name": "web", "port": {"name": "HTTP"}}}),
        f'{P}.backend.service.port.name: Invalid value: "HTTP":',
    ),
    (
        "resource without kind",
        with_backend({"resource": {"name": "bucket"}}),
        f"{P}.backend.resource.kind: Required value: kind is required",
    ),
    (
        "default backend checked too",
        raw(rules=[], defaultBackend={"service": {"name": "web"}}),
        "spec.defaultBackend: Required value: port name or number is required",
    ),
    (
        "tls host",
        raw(tls=[{"hosts": ["-bad.example.com"], "secretName": "t"}]),
        'spec.tls[0].hosts[0]: Invalid value: "-bad.example.com"',
    ),
    (
        "tls secret name",
        raw(tls=[{"hosts": ["www.example.com"], "secretName": "Web_TLS"}]),
        'spec.tls[0].secretName: Invalid value: "Web_TLS"',
    ),
    (
        "class name",
        raw(ingressClassName="Bad Class"),
        'spec.ingressClassName: Invalid value: "Bad Class"',
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_field_errors_as_kube_apiserver(doc: dict[str, Any], expected: str) -> None:
    assert first_error(doc).startswith(expected)


def test_a_wildcard_rule_host_and_an_empty_implementation_specific_path_are_valid() -> None:
    doc = raw(
        rules=[
            {
                "host": "*.apps.example.com",
                "http": {
                    "paths": [
                        {
                            "pathType": "ImplementationSpecific",
                            "backend": {"service": {"name": "web", "port": {"name": "http"}}},
                        }
                    ]
                },
            }
        ]
    )
    assert errors(ingress(doc)) == []


def test_class_annotation_and_field_together_refused_on_create_only() -> None:
    doc = raw(ingressClassName="openshift-default")
    doc["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx"}
    obj = ingress(doc)
    with pytest.raises(InvalidObject) as exc:
        validate(obj)
    assert str(exc.value) == (
        'Ingress "web" is invalid: annotations.kubernetes.io/ingress.class: Invalid value: '
        '"nginx": can not be set when the class field is also set'
    )
    old = ingress(raw())
    assert update_errors(obj, old) == []


def test_the_annotation_names_the_class_over_the_field() -> None:
    doc = raw(ingressClassName="openshift-default")
    assert ingress(doc).class_name == "openshift-default"
    doc["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx"}
    assert ingress(doc).class_name == "nginx"


def ingress_class(controller: str, **spec: Any) -> IngressClass:
    obj = parse_object(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": "openshift-default"},
            "spec": {"controller": controller, **spec},
        }
    )
    assert isinstance(obj, IngressClass)
    return obj


CLASS_CASES: list[tuple[IngressClass, str]] = [
    (ingress_class(""), "spec.controller: Required value"),
    (
        ingress_class("ingress-to-route"),
        'spec.controller: Invalid value: "ingress-to-route": must be a domain-prefixed path',
    ),
    (ingress_class("Openshift.io/x"), 'spec.controller: Invalid value: "Openshift.io":'),
    (ingress_class("openshift.io/a b"), 'spec.controller: Invalid value: "a b": Invalid path'),
    (ingress_class("a.io/" + "x" * 250), "spec.controller: Too long: must have at most 250 bytes"),
    (
        ingress_class("a.io/b", parameters={"kind": "K"}),
        "spec.parameters.name: Required value: name is required",
    ),
    (
        ingress_class("a.io/b", parameters={"kind": "K", "name": "n", "scope": "Namespace"}),
        "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
    ),
    (
        ingress_class("a.io/b", parameters={"kind": "K", "name": "n", "namespace": "x"}),
        "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'",
    ),
    (
        ingress_class("a.io/b", parameters={"kind": "K", "name": "n", "scope": "Global"}),
        'spec.parameters.scope: Unsupported value: "Global"',
    ),
]


@pytest.mark.parametrize(("obj", "expected"), CLASS_CASES)
def test_ingress_class_field_errors(obj: IngressClass, expected: str) -> None:
    found = errors(obj)
    assert found and str(found[0]).startswith(expected)


def test_ingress_class_controller_is_immutable_and_cluster_scoped() -> None:
    old = ingress_class("openshift.io/ingress-to-route")
    new = ingress_class("example.com/other")
    assert [str(e) for e in update_errors(new, old)] == [
        'spec.controller: Invalid value: "example.com/other": field is immutable'
    ]
    assert errors(old) == []
    namespaced = copy.deepcopy(old)
    namespaced.metadata.namespace = "default"
    assert str(errors(namespaced)[0]).startswith("metadata.namespace: Forbidden")


def test_columns_as_kubectl_prints_them() -> None:
    doc = raw(
        ingressClassName="openshift-default",
        tls=[{"hosts": ["www.example.com"], "secretName": "t"}],
        rules=[{"host": h} for h in ("a.example.com", "", "c.example.com", "d.example.com")],
    )
    doc["status"] = {"loadBalancer": {"ingress": [{"hostname": "router.shiftnet.local"}]}}
    obj = ingress(doc)
    heads = [c.header for c in columns_for(Ingress)]
    assert heads == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    row = cells(columns_for(Ingress), obj, NOW)
    assert row[:5] == [
        "web",
        "openshift-default",
        "a.example.com,*,c.example.com + 1 more...",
        "router.shiftnet.local",
        "80, 443",
    ]
    ic = ingress_class("openshift.io/ingress-to-route")
    assert [c.header for c in columns_for(IngressClass)] == [
        "NAME",
        "CONTROLLER",
        "PARAMETERS",
        "AGE",
    ]
    assert cells(columns_for(IngressClass), ic, NOW)[:3] == [
        "openshift-default",
        "openshift.io/ingress-to-route",
        "<none>",
    ]
