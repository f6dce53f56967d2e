"""kubectl against a running ``shiftnet apiserver``: Ingresses and IngressClasses."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  ingressClassName: openshift-default
  tls: [{hosts: [shop.example.com], secretName: shop-tls}]
  rules:
    - host: shop.example.com
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"""


def test_kubectl_applies_lists_and_refuses_ingresses(api: APIServerProcess, tmp_path: Path) -> None:
    resources = api.ok("api-resources", "--api-group=networking.k8s.io")
    assert any(
        line.split()[:2] == ["ingresses", "ing"] and line.split()[-1] == "Ingress"
        for line in resources.splitlines()
    ), resources
    assert any(line.split()[0] == "ingressclasses" for line in resources.splitlines())
    path = tmp_path / "ing.yaml"
    path.write_text(INGRESS)
    assert api.ok("apply", "-f", str(path)).strip() == "ingress.networking.k8s.io/shop created"
    assert api.ok("apply", "-f", str(path)).strip() == "ingress.networking.k8s.io/shop unchanged"
    table = api.ok("get", "ing").splitlines()
    assert table[0].split() == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert table[1].split()[:4] == ["shop", "openshift-default", "shop.example.com", "80,"]
    got = api.json("get", "ingress", "shop")
    assert got["spec"]["rules"][0]["http"]["paths"][0]["pathType"] == "Prefix"

    path.write_text(INGRESS.replace("pathType: Prefix", "pathType: Regex"))
    refused = api.kubectl("apply", "-f", str(path))
    assert refused.returncode != 0
    assert 'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex"' in refused.stderr
    assert (
        api.json("get", "ingress", "shop")["spec"]["rules"][0]["http"]["paths"][0]["pathType"]
        == "Prefix"
    )


def test_kubectl_ingress_class_controller_cannot_change(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "class.yaml"
    doc = (
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: mine}\n"
        "spec: {controller: openshift.io/ingress-to-route}\n"
    )
    path.write_text(doc)
    assert api.ok("apply", "-f", str(path)).strip() == "ingressclass.networking.k8s.io/mine created"
    table = api.ok("get", "ingressclass").splitlines()
    assert ["mine", "openshift.io/ingress-to-route", "<none>"] in [r.split()[:3] for r in table]
    path.write_text(doc.replace("openshift.io/ingress-to-route", "example.com/other"))
    refused = api.kubectl("apply", "-f", str(path))
    assert refused.returncode != 0 and "spec.controller" in refused.stderr, refused.stderr
    assert "field is immutable" in refused.stderr


def test_kubectl_create_ingress_sends_protobuf_and_is_stored_as_asked(
    api: APIServerProcess,
) -> None:
    out = api.ok(
        "create",
        "ingress",
        "simple",
        "--class=openshift-default",
        "--rule=foo.example.com/bar*=svc1:8080",
        "--rule=tls.example.com/=svc2:http,tls=tls-secret",
    )
    assert out.strip() == "ingress.networking.k8s.io/simple created"
    spec = api.json("get", "ingress", "simple")["spec"]
    assert spec["ingressClassName"] == "openshift-default"
    assert spec["tls"] == [{"hosts": ["tls.example.com"], "secretName": "tls-secret"}]
    assert spec["rules"] == [
        {
            "host": "foo.example.com",
            "http": {
                "paths": [
                    {
                        "path": "/bar",
                        "pathType": "Prefix",
                        "backend": {"service": {"name": "svc1", "port": {"number": 8080}}},
                    }
                ]
            },
        },
        {
            "host": "tls.example.com",
            "http": {
                "paths": [
                    {
                        "path": "/",
                        "pathType": "Exact",
                        "backend": {"service": {"name": "svc2", "port": {"name": "http"}}},
                    }
                ]
            },
        },
    ]
