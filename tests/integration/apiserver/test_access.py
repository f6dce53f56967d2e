"""Credentials, TLS, 401s and discovery of a real ``shiftnet apiserver``, through real kubectl."""

from __future__ import annotations

import ipaddress
import json
import ssl
import stat

import httpx
import pytest
from cryptography import x509
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kept\n"


def _mode(path: object) -> int:
    return stat.S_IMODE(path.stat().st_mode)  # type: ignore[attr-defined]


def test_first_start_makes_private_credentials_and_a_kubeconfig(api: APIServerProcess) -> None:
    assert _mode(api.home) == 0o700
    assert _mode(api.home / "apiserver") == 0o700
    assert _mode(api.kubeconfig) == 0o600
    for name in ("ca.crt", "ca.key", "serving.crt", "serving.key", "admin.token"):
        assert _mode(api.home / "apiserver" / name) == 0o600, name
    cert = x509.load_pem_x509_certificate((api.home / "apiserver" / "serving.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in san.get_values_for_type(x509.IPAddress)
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    # kubectl uses the file as is: it verifies the server against the CA in it
    assert "Server Version: v1.32" in api.ok("version")


def test_requests_without_a_valid_token_get_401_status(api: APIServerProcess) -> None:
    ctx = ssl.create_default_context(cafile=api.ca)
    with httpx.Client(verify=ctx, timeout=10) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic eDp5"}):
            res = http.get(f"{api.url}/api/v1/pods", headers=headers)
            assert res.status_code == 401
            body = res.json()
            assert body["kind"] == "Status" and body["reason"] == "Unauthorized"
            assert body["code"] == 401
        ok = http.get(f"{api.url}/api/v1/pods", headers={"Authorization": f"Bearer {api.token}"})
        assert ok.status_code == 200 and ok.json()["kind"] == "PodList"
    bad = api.kubectl("get", "pods", "--token", "not-the-token")
    assert bad.returncode != 0
    assert "You must be logged in to the server" in bad.stderr


def test_a_restart_keeps_the_ca_and_token(api: APIServerProcess) -> None:
    before = api.kubeconfig.read_text()
    api.ok("create", "-f", "-", input=NAMESPACE)
    api.stop()
    api.start()
    assert api.kubeconfig.read_text() == before
    assert "kept" in api.ok("get", "namespaces")


def test_api_resources_lists_every_kind_with_short_names(api: APIServerProcess) -> None:
    out = api.ok("api-resources", "--no-headers")
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert set(rows) == {
        "namespaces",
        "pods",
        "services",
        "endpoints",
        "nodes",
        "routes",
        "clusternetworks",
        "hostsubnets",
        "secrets",
        "events",
        "endpointslices",
        "ingresses",
        "ingressclasses",
    }
    assert rows["services"][1:] == ["svc", "v1", "true", "Service"]
    assert rows["pods"][1] == "po" and rows["endpoints"][1] == "ep"
    assert rows["namespaces"][1:] == ["ns", "v1", "false", "Namespace"]
    assert rows["nodes"][1] == "no"
    assert rows["routes"][1:] == ["route.openshift.io/v1", "true", "Route"]
    assert rows["hostsubnets"][1:] == ["network.openshift.io/v1", "false", "HostSubnet"]
    assert rows["secrets"][1:] == ["v1", "true", "Secret"]
    assert rows["events"][1:] == ["ev", "v1", "true", "Event"]
    assert rows["endpointslices"][1:] == ["discovery.k8s.io/v1", "true", "EndpointSlice"]
    assert rows["ingresses"][1:] == ["ing", "networking.k8s.io/v1", "true", "Ingress"]
    assert rows["ingressclasses"][1:] == ["networking.k8s.io/v1", "false", "IngressClass"]
    wide = api.ok("api-resources", "-o", "wide", "--api-group=route.openshift.io")
    assert "create,delete,deletecollection,get,list,patch,update,watch" in wide
    assert "all" in wide.splitlines()[1]  # routes are in the "all" category, as OpenShift


def test_subresources_are_discovered(api: APIServerProcess) -> None:
    core = json.loads(api.ok("get", "--raw", "/api/v1"))
    names = {r["name"]: r for r in core["resources"]}
    assert names["pods/log"]["verbs"] == ["get"]
    assert {"pods/status", "services/status", "nodes/status"} <= set(names)
    routes = json.loads(api.ok("get", "--raw", "/apis/route.openshift.io/v1"))
    assert "routes/status" in {r["name"] for r in routes["resources"]}


def test_openapi_is_served_so_kubectl_explain_works(api: APIServerProcess) -> None:
    out = api.ok("explain", "route.spec.tls")
    assert "termination" in out and "GROUP:      route.openshift.io" in out
    v3 = json.loads(api.ok("get", "--raw", "/openapi/v3"))
    assert set(v3["paths"]) == {
        "api/v1",
        "apis/route.openshift.io/v1",
        "apis/network.openshift.io/v1",
        "apis/discovery.k8s.io/v1",
        "apis/networking.k8s.io/v1",
    }
    doc = json.loads(api.ok("get", "--raw", v3["paths"]["api/v1"]["serverRelativeURL"]))
    assert "io.k8s.api.core.v1.Service" in doc["components"]["schemas"]
    assert json.loads(api.ok("get", "--raw", "/openapi/v2"))["swagger"] == "2.0"


def test_openapi_v2_answers_protobuf_json_or_406_by_accept(api: APIServerProcess) -> None:
    ctx = ssl.create_default_context(cafile=api.ca)
    auth = {"Authorization": f"Bearer {api.token}"}
    with httpx.Client(base_url=api.url, verify=ctx, timeout=10, headers=auth) as http:
        proto = http.get(
            "/openapi/v2",
            headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
        )
        assert proto.status_code == 200
        assert proto.headers["Content-Type"] == (
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )
        assert proto.content[:5] == b"\x0a\x032.0"  # field 1 (swagger): "2.0"
        assert proto.headers["Vary"] == "Accept"
        plain = http.get("/openapi/v2", headers={"Accept": "application/json"})
        assert plain.json()["swagger"] == "2.0"
        refused = http.get("/openapi/v2", headers={"Accept": "text/html"})
        assert refused.status_code == 406
        assert refused.json()["reason"] == "NotAcceptable"
