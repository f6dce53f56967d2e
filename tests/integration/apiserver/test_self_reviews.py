"""``kubectl auth can-i`` and ``kubectl auth whoami`` against ``shiftnet apiserver``.

kubectl sends the self reviews as protobuf; every valid token may do everything
here, so each review answers yes, and ``whoami`` names the token's user.
"""

from __future__ import annotations

import ssl

import httpx
import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

ACCESS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
REVIEW = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview"}


def test_kubectl_auth_can_i_and_whoami(api: APIServerProcess) -> None:
    can = api.kubectl("auth", "can-i", "create", "routes")
    assert (can.returncode, can.stdout.strip()) == (0, "yes"), can.stderr
    log = api.kubectl("auth", "can-i", "get", "pods", "--subresource=log", "-n", "other")
    assert (log.returncode, log.stdout.strip()) == (0, "yes"), log.stderr
    url = api.kubectl("auth", "can-i", "get", "/healthz")
    assert url.stdout.strip() == "yes", url.stderr
    listed = api.ok("auth", "can-i", "--list")
    assert listed.splitlines()[1].split() == ["*.*", "[]", "[]", "[*]"], listed
    who = api.json("auth", "whoami")
    assert who["kind"] == "SelfSubjectReview"
    assert who["status"]["userInfo"] == {
        "username": "shiftnet-admin",
        "groups": ["system:masters", "system:authenticated"],
    }


def test_a_review_without_exactly_one_kind_of_attributes_is_invalid(
    api: APIServerProcess, http: httpx.Client
) -> None:
    allowed = http.post(ACCESS, json={**REVIEW, "spec": {"resourceAttributes": {"verb": "get"}}})
    assert allowed.status_code == 201, allowed.text
    assert allowed.json()["status"]["allowed"] is True
    assert allowed.json()["spec"] == {"resourceAttributes": {"verb": "get"}}  # echoed
    for spec in ({}, {"resourceAttributes": {}, "nonResourceAttributes": {"path": "/"}}):
        reply = http.post(ACCESS, json={**REVIEW, "spec": spec})
        assert reply.status_code == 422, reply.text
        status = reply.json()
        assert status["reason"] == "Invalid"
        assert status["details"]["causes"][0]["field"] == "spec.resourceAttributes", status
    wrong = http.post(ACCESS, json={**REVIEW, "kind": "Pod", "spec": {}})
    assert wrong.status_code == 400, wrong.text
    trusted = ssl.create_default_context(cafile=api.ca)
    anonymous = httpx.post(api.url + ACCESS, json=REVIEW, verify=trusted)
    assert anonymous.status_code == 401
