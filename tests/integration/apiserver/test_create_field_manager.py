"""A create's ``fieldManager`` is checked as kube-apiserver checks it, though a create
records no managedFields: a bad one is a 422 naming the option, and nothing is written."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.integration

SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"ports": [{"port": 80}]},
}
PATH = "/api/v1/namespaces/default/services"


@pytest.mark.parametrize(
    ("manager", "message"),
    [
        ("x" * 129, "fieldManager: Too long: may not be more than 128 bytes"),
        ("ci\x07", "fieldManager: Invalid value"),
    ],
)
def test_a_bad_field_manager_refuses_the_create(
    http: httpx.Client, manager: str, message: str
) -> None:
    got = http.post(PATH, params={"fieldManager": manager}, json=SERVICE)
    assert got.status_code == 422, got.text
    assert got.json()["reason"] == "Invalid" and message in got.json()["message"]
    assert http.get(f"{PATH}/web").status_code == 404


def test_a_good_field_manager_creates(http: httpx.Client) -> None:
    got = http.post(PATH, params={"fieldManager": "deployer"}, json=SERVICE)
    assert got.status_code == 201, got.text
    assert http.get(f"{PATH}/web").status_code == 200
