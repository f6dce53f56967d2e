"""The ``kube`` backend sends what a write needs and nothing more, against a real
``shiftnet apiserver``: a create of a fresh object is one request (no ``/status`` write
after it), and the proxy environment is read once, when the store
connects, not on every request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from tests.integration.store.objects import ADMITTED
from tests.support.apiserver import APIServerProcess
from tests.support.ports import free_port
from tests.support.stores import start_apiserver

from shiftnet.api import Namespace, Route
from shiftnet.client import Client
from shiftnet.errors import NotFound, StoreUnavailable
from shiftnet.store import open_store
from shiftnet.store.kube import KubeStore
from shiftnet.store.kube_calls import ResourceCalls

pytestmark = pytest.mark.integration


@pytest.fixture
def api(request: pytest.FixtureRequest, tmp_path: Path) -> APIServerProcess:
    return start_apiserver(request, tmp_path / "apiserver")


@pytest.fixture
async def store(api: APIServerProcess) -> AsyncIterator[KubeStore]:
    st = open_store(f"kube://{api.kubeconfig}")
    assert isinstance(st, KubeStore)
    yield st
    await st.close()


def route(name: str) -> Route:
    return Route.model_validate(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"host": f"{name}.example.com", "to": {"kind": "Service", "name": "s"}},
        }
    )


async def test_a_create_with_an_empty_status_is_one_write(
    store: KubeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new Route's model carries ``status: {ingress: []}``, which the server shows as no
    status: that is no status change, so no ``/status`` write follows the create (the
    server would accept it as a no-op, at the cost of a second request per create)."""
    sent: list[str] = []
    real = ResourceCalls.replace

    def spy(self: ResourceCalls, *args: Any, status: bool = False, **opts: Any) -> Any:
        sent.append("status" if status else "object")
        return real(self, *args, status=status, **opts)

    monkeypatch.setattr(ResourceCalls, "replace", spy)
    created = await Client(store).create(route("one"))
    assert sent == []
    assert created.status.ingress == []
    # a status that is not empty still goes through /status
    made = await store.create("routes", {**route("two").to_dict(), "status": ADMITTED})
    assert (sent, made["status"]) == (["status"], ADMITTED)


async def test_the_proxy_environment_is_read_when_the_store_connects(
    api: APIServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for var in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)

    # named before the first request: the store goes through it (and fails, in one sentence)
    monkeypatch.setenv("HTTPS_PROXY", closed)
    through_proxy = open_store(f"kube://{api.kubeconfig}")
    try:
        with pytest.raises(StoreUnavailable, match="cannot reach the API server"):
            await through_proxy.list("routes", "ns")
    finally:
        await through_proxy.close()

    # NO_PROXY names the server: straight to it
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    bypassing = open_store(f"kube://{api.kubeconfig}")
    try:
        assert (await bypassing.list("routes", "ns")).items == []
    finally:
        await bypassing.close()

    # set after the store connected: not looked at again for each request
    monkeypatch.delenv("NO_PROXY")
    monkeypatch.delenv("HTTPS_PROXY")
    direct = open_store(f"kube://{api.kubeconfig}")
    try:
        await direct.list("routes", "ns")
        monkeypatch.setenv("HTTPS_PROXY", closed)
        await Client(direct).create(route("later"))
        assert [o["metadata"]["name"] for o in (await direct.list("routes", "ns")).items] == [
            "later"
        ]
    finally:
        await direct.close()


async def test_create_and_get_are_sent_without_the_generated_calls(
    store: KubeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create and a get go to the library's REST client as one prebuilt request each:
    the body is not walked through ``sanitize_for_serialization`` (the generated calls'
    model-to-JSON step, a third of the backend's CPU per create), for a namespaced kind of
    a group and a cluster-scoped core kind alike, and the answers are the server's."""

    def walked(self: ApiClient, obj: Any) -> Any:
        raise AssertionError("the generated calls' serialisation is on the create/get path")

    await store.list("routes", "ns")  # connected: discovery goes through the library
    monkeypatch.setattr(ApiClient, "sanitize_for_serialization", walked)
    created = await Client(store).create(route("direct"))
    got = await store.get("routes", "ns", "direct")
    assert got["metadata"]["uid"] == created.metadata.uid
    assert got["spec"]["host"] == "direct.example.com"
    made = await store.create(
        "namespaces", Namespace.model_validate({"metadata": {"name": "x-1"}}).to_dict()
    )
    assert (await store.get("namespaces", None, "x-1"))["metadata"]["uid"] == made["metadata"][
        "uid"
    ]
    with pytest.raises(NotFound):
        await store.get("routes", "ns", "missing")


async def test_create_and_get_run_the_credential_step_on_every_request(
    store: KubeStore, api: APIServerProcess
) -> None:
    """The library's credential step (a token refresh hook, as in-cluster configs set)
    runs for each direct create and get, so a rotated token is used at once."""
    await store.list("routes", "ns")
    assert store._client is not None
    config = store._client.configuration
    good = config.api_key["BearerToken"]
    config.api_key["BearerToken"] = "Bearer not-a-token"
    with pytest.raises(StoreUnavailable, match="HTTP 401"):
        await store.get("routes", "ns", "nothing")
    refreshed: list[str] = []

    def refresh(cfg: Any) -> None:
        refreshed.append("yes")
        cfg.api_key["BearerToken"] = good

    config.refresh_api_key_hook = refresh
    await Client(store).create(route("rotated"))
    assert (await store.get("routes", "ns", "rotated"))["spec"]["host"] == "rotated.example.com"
    assert len(refreshed) == 2
