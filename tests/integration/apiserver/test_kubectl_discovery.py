"""Aggregated discovery against a running ``shiftnet apiserver``: real kubectl, raw HTTPS
and the official Python client, which still reads the unaggregated documents."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from kubernetes import client, config, dynamic
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

KUBECTL_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
ROUTE = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web}
spec:
  host: web.example.com
  to: {kind: Service, name: web}
"""
# kubectl -v=6 logs one line per request: "GET https://host:port/path?q 200 OK in 1 milliseconds"
REQUEST_LINE = re.compile(r"\] (GET|POST|PUT|PATCH|DELETE) (https://\S+) (\d{3})")


def requests_of(api: APIServerProcess, cache: Path, *args: str) -> tuple[str, list[str]]:
    """Run kubectl with a fresh discovery cache; its output and the paths it asked for."""
    res = api.kubectl("--cache-dir", str(cache), "-v=6", *args)
    assert res.returncode == 0, res.stderr
    paths = [
        f"{method} {urlsplit(url).path} {status}"
        for method, url, status in REQUEST_LINE.findall(res.stderr)
    ]
    return res.stdout, paths


def test_kubectl_learns_the_api_from_api_and_apis_alone(
    api: APIServerProcess, tmp_path: Path
) -> None:
    api.ok("apply", "-f", "-", input=ROUTE)
    out, paths = requests_of(api, tmp_path / "cache1", "api-resources")
    assert paths == ["GET /api 200", "GET /apis 200"]
    assert "routes" in out and "hostsubnets" in out
    out, paths = requests_of(api, tmp_path / "cache2", "get", "routes")
    assert paths == [
        "GET /api 200",
        "GET /apis 200",
        "GET /apis/route.openshift.io/v1/namespaces/default/routes 200",
    ]
    assert out.splitlines()[1].split()[:2] == ["web", "web.example.com"]


def _rows_from_unaggregated(http: httpx.Client) -> set[tuple[str, ...]]:
    """What `kubectl api-resources -o wide` prints, built from the unaggregated documents."""
    plain = {"Accept": "application/json"}
    lists = [http.get("/api/v1", headers=plain).json()]
    for group in http.get("/apis", headers=plain).json()["groups"]:
        gv = group["preferredVersion"]["groupVersion"]
        lists.append(http.get(f"/apis/{gv}", headers=plain).json())
    rows = set()
    for doc in lists:
        for r in doc["resources"]:
            if "/" in r["name"]:
                continue  # kubectl lists no subresources
            rows.add(
                (
                    r["name"],
                    ",".join(r.get("shortNames", [])),
                    doc["groupVersion"],
                    str(r["namespaced"]).lower(),
                    r["kind"],
                    ",".join(r["verbs"]),
                    ",".join(r.get("categories", [])),
                )
            )
    return rows


def test_api_resources_prints_what_the_unaggregated_documents_say(
    api: APIServerProcess, http: httpx.Client, tmp_path: Path
) -> None:
    out = api.ok("--cache-dir", str(tmp_path / "cache"), "api-resources", "-o", "wide")
    lines = out.splitlines()
    header = lines[0]
    starts = [header.index(c) for c in header.split()]
    rows = set()
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows.add(tuple(cells))
    assert header.split() == [
        "NAME",
        "SHORTNAMES",
        "APIVERSION",
        "NAMESPACED",
        "KIND",
        "VERBS",
        "CATEGORIES",
    ]
    assert rows == _rows_from_unaggregated(http)


def test_aggregated_answer_has_its_type_an_etag_and_304_when_unchanged(
    http: httpx.Client,
) -> None:
    for path in ("/api", "/apis"):
        first = http.get(path, headers={"Accept": KUBECTL_ACCEPT})
        assert first.status_code == 200
        assert first.headers["Content-Type"] == (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )
        assert first.headers["Vary"] == "Accept"
        doc = first.json()
        assert doc["kind"] == "APIGroupDiscoveryList"
        assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
        etag = first.headers["ETag"]
        again = http.get(path, headers={"Accept": KUBECTL_ACCEPT, "If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["ETag"] == etag and again.headers["Vary"] == "Accept"
        stale = http.get(path, headers={"Accept": KUBECTL_ACCEPT, "If-None-Match": '"old"'})
        assert stale.status_code == 200 and stale.content == first.content
        # v2beta1 is its own representation with its own tag
        beta = http.get(
            path,
            headers={
                "Accept": KUBECTL_ACCEPT.split(",", 1)[1],
                "If-None-Match": etag,
            },
        )
        assert beta.status_code == 200 and beta.headers["ETag"] != etag
        assert beta.json()["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
        assert beta.headers["Content-Type"].endswith(";v=v2beta1;as=APIGroupDiscoveryList")
    # without an aggregated Accept: the unaggregated documents, as before
    plain = http.get("/apis", headers={"Accept": "application/json"})
    assert plain.headers["Content-Type"].startswith("application/json")
    assert plain.json()["kind"] == "APIGroupList" and plain.headers["Vary"] == "Accept"
    assert http.get("/api").json()["kind"] == "APIVersions"


def test_python_client_discovers_through_the_unaggregated_documents(
    api: APIServerProcess,
) -> None:
    api.ok("apply", "-f", "-", input=ROUTE)
    with config.new_client_from_config(config_file=str(api.kubeconfig)) as api_client:
        assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]
        groups = client.ApisApi(api_client).get_api_versions().groups
        assert "route.openshift.io" in {g.name for g in groups}
        # the dynamic client reads /api, /apis and each /apis/<group>/<version>
        dyn = dynamic.DynamicClient(api_client)
        routes = dyn.resources.get(api_version="route.openshift.io/v1", kind="Route")
        assert routes.namespaced and not routes.short_names
        hosts = [r.spec.host for r in routes.get(namespace="default").items]
        assert hosts == ["web.example.com"]
        services = dyn.resources.get(api_version="v1", kind="Service")
        assert services.short_names == ["svc"]
