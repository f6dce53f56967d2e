"""kubectl against a running ``shiftnet apiserver``: EndpointSlices as users see them."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

SLICE = """\
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abcde
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints:
- addresses: [10.1.0.2]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node-a
- addresses: [10.1.0.3]
  conditions: {ready: false, serving: true, terminating: true}
ports:
- {name: http, port: 8080, protocol: TCP}
"""


def test_kubectl_applies_lists_and_reads_endpointslices(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "slice.yaml"
    path.write_text(SLICE)
    assert "endpointslices" in api.ok("api-resources", "--api-group=discovery.k8s.io")
    out = api.ok("apply", "--validate=strict", "-f", str(path)).strip()
    assert out == "endpointslice.discovery.k8s.io/web-abcde created"
    table = api.ok("get", "endpointslices").splitlines()
    assert table[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert table[1].split()[:4] == ["web-abcde", "IPv4", "8080", "10.1.0.2,10.1.0.3"]
    got = api.json("get", "endpointslice", "web-abcde")
    assert got["endpoints"][1]["conditions"] == {
        "ready": False,
        "serving": True,
        "terminating": True,
    }
    selected = api.json("get", "endpointslices", "-l", "kubernetes.io/service-name=web")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["web-abcde"]


def test_kubectl_is_refused_an_address_of_the_wrong_family(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "slice.yaml"
    path.write_text(SLICE.replace("10.1.0.2", "fd00::2"))
    result = api.kubectl("apply", "-f", str(path))
    assert result.returncode != 0
    assert "endpoints[0].addresses[0]" in result.stderr
    assert "must be a valid IPv4 address" in result.stderr
    assert api.kubectl("get", "endpointslice", "web-abcde").returncode != 0
