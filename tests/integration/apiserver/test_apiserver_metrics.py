"""A real ``shiftnet apiserver --metrics-listen`` counts known requests under kube-apiserver's
series: exact deltas of ``apiserver_request_total`` per verb, resource, scope and code (a
refused token counted too), the duration histogram's counts, the in-flight gauge back at 0,
an open watch in ``apiserver_registered_watchers`` and ``apiserver_longrunning_requests``
until its client leaves, and no series for a URL the server does not serve."""

from __future__ import annotations

import http.client
import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess
from tests.support.ports import free_port
from tests.support.scrape import Scrape, scrape

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"ports": [{"port": 80}]},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[APIServerProcess, str]]:
    metrics = f"127.0.0.1:{free_port()}"
    server = APIServerProcess(tmp_path / "home", extra_args=("--metrics-listen", metrics))
    server.home.mkdir()
    server.start()
    try:
        yield server, f"http://{metrics}/metrics"
    finally:
        server.stop()


def connect(server: APIServerProcess) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=server.ca)
    return http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)


def call(
    server: APIServerProcess, method: str, path: str, body: object = None, auth: bool = True
) -> int:
    conn = connect(server)
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = f"Bearer {server.token}"
    conn.request(method, path, json.dumps(body) if body is not None else None, headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def requests(s: Scrape, verb: str, code: str, **labels: str) -> float:
    return s.value("apiserver_request_total", verb=verb, code=code, **labels) or 0.0


def test_known_requests_give_exact_deltas(api: tuple[APIServerProcess, str]) -> None:
    server, url = api
    services = "/api/v1/namespaces/default/services"
    svc = {"group": "", "version": "v1", "resource": "services", "component": "apiserver"}
    before = scrape(url)
    assert before.value("apiserver_current_inflight_requests", request_kind="readOnly") == 0
    assert call(server, "GET", services) == 200
    assert call(server, "GET", services, auth=False) == 401
    assert call(server, "POST", services, SERVICE) == 201
    assert call(server, "GET", services + "/web") == 200
    assert call(server, "GET", services + "/nope") == 404
    assert call(server, "GET", services + "?dryRun=All") == 200
    assert call(server, "DELETE", services + "/web") == 200
    assert call(server, "GET", "/apis/evil.example.com/v9/things") == 404
    after = scrape(url)

    def delta(verb: str, code: str, **labels: str) -> float:
        return requests(after, verb, code, **labels) - requests(before, verb, code, **labels)

    namespace = {**svc, "scope": "namespace", "subresource": "", "dry_run": ""}
    resource = {**svc, "scope": "resource", "subresource": "", "dry_run": ""}
    assert delta("LIST", "200", **namespace) == 1
    assert delta("LIST", "401", **namespace) == 1
    assert delta("LIST", "200", **{**namespace, "dry_run": "All"}) == 1
    assert delta("POST", "201", **resource) == 1
    assert delta("GET", "200", **resource) == 1
    assert delta("GET", "404", **resource) == 1
    assert delta("DELETE", "200", **resource) == 1
    # a URL outside what is served adds no label of its own
    assert not any("evil" in str(labels) for labels, _ in after.matching("apiserver_request_total"))
    assert delta("GET", "404", group="", version="", resource="", scope="") == 1
    # timed: every request above that was not long-running
    count = "apiserver_request_duration_seconds_count"
    lists = after.value(count, verb="LIST", **namespace) or 0
    assert lists - (before.value(count, verb="LIST", **namespace) or 0) == 2
    assert after.value(count, verb="POST", **resource) == 1
    assert after.value("apiserver_current_inflight_requests", request_kind="readOnly") == 0
    assert after.value("apiserver_current_inflight_requests", request_kind="mutating") == 0


def test_an_open_watch_is_a_registered_watcher_until_its_client_leaves(
    api: tuple[APIServerProcess, str],
) -> None:
    server, url = api
    labels = {"group": "", "version": "v1", "resource": "services", "scope": "namespace"}
    conn = connect(server)
    conn.request(
        "GET",
        "/api/v1/namespaces/default/services?watch=true",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    response = conn.getresponse()
    assert response.status == 200
    during = scrape(url)
    watchers = {"group": "", "version": "v1", "kind": "Service"}
    assert during.value("apiserver_registered_watchers", **watchers) == 1
    assert during.value("apiserver_longrunning_requests", verb="WATCH", **labels) == 1
    assert requests(during, "WATCH", "200", **labels) == 0  # counted when it ends
    assert during.value("apiserver_current_inflight_requests", request_kind="readOnly") == 0
    conn.close()
    deadline = time.monotonic() + 10
    while True:
        after = scrape(url)
        if after.value("apiserver_registered_watchers", **watchers) == 0:
            break
        assert time.monotonic() < deadline, after.text
        time.sleep(0.1)
    assert after.value("apiserver_longrunning_requests", verb="WATCH", **labels) == 0
    assert requests(after, "WATCH", "200", **labels) == 1
    assert not after.matching("apiserver_request_duration_seconds_count", verb="WATCH")
