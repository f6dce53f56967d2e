"""What only the ``kube`` backend has to get right, against a real ``shiftnet apiserver``:
core and custom kinds, cluster-scoped ones, status through ``/status``, paged
lists, watches that outlive the server's ``timeoutSeconds``, and errors as one
sentence of the store's own types."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.store.objects import ADMITTED, RESOURCE, number, renumbered, thing
from tests.support.apiserver import APIServerProcess
from tests.support.cli import SHIFTNET
from tests.support.ports import free_port
from tests.support.stores import start_apiserver

from shiftnet.errors import ConfigError, InvalidObject, NotFound, StoreUnavailable
from shiftnet.store import kube, open_store
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


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "far", "labels": {"kubernetes.io/hostname": "far"}},
    "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]},
}


async def test_core_cluster_scoped_kind_keeps_the_status_it_was_created_with(store) -> None:
    created = await store.create("nodes", NODE)
    assert created["status"] == NODE["status"], "status went through nodes/status"
    assert (await store.get("nodes", None, "far"))["status"] == NODE["status"]
    ready = {**created["status"], "conditions": [{"type": "Ready", "status": "True"}]}
    updated = await store.update("nodes", {**created, "status": ready})
    assert updated["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    listed = await store.list("nodes")
    assert [(o["kind"], o["metadata"]["name"]) for o in listed.items] == [("Node", "far")]
    gone = await store.delete("nodes", None, "far")
    assert gone["metadata"]["name"] == "far"
    with pytest.raises(NotFound):
        await store.get("nodes", None, "far")


async def test_custom_cluster_scoped_kind_round_trips(store) -> None:
    subnet = {
        "apiVersion": "network.openshift.io/v1",
        "kind": "HostSubnet",
        "metadata": {"name": "far"},
        "host": "far",
        "hostIP": "127.0.0.1",
        "subnet": "10.128.2.0/23",
    }
    start = await store.revision()
    made = await store.create("hostsubnets", subnet)
    assert made["subnet"] == "10.128.2.0/23" and "namespace" not in made["metadata"]
    seen = []
    async for ev in store.watch("hostsubnets", start):
        seen.append((ev.type, ev.object["kind"], ev.object["subnet"], ev.resource))
        break
    assert seen == [("ADDED", "HostSubnet", "10.128.2.0/23", "hostsubnets")]
    gone = await store.delete("hostsubnets", None, "far")
    assert gone["host"] == "far"


async def test_a_spec_and_status_change_in_one_update_writes_both(store) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "command": ["true"]}]},
    }
    made = await store.create("pods", pod)
    changed = {
        **made,
        "metadata": {**made["metadata"], "labels": {"app": "x"}},
        "spec": {**made["spec"], "nodeName": "far"},
        "status": {"phase": "Running", "podIP": "127.10.0.9"},
    }
    out = await store.update("pods", changed)
    assert out["spec"]["nodeName"] == "far"
    assert out["metadata"]["labels"] == {"app": "x"}
    assert out["status"]["phase"] == "Running"
    assert (await store.get("pods", "default", "p"))["status"]["podIP"] == "127.10.0.9"


async def test_lists_are_read_in_pages(store, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(7):
        await store.create(RESOURCE, thing(f"r{i}"))
    monkeypatch.setattr(kube, "LIST_PAGE", 2)
    listed = await store.list(RESOURCE, "ns")
    assert [o["metadata"]["name"] for o in listed.items] == [f"r{i}" for i in range(7)]
    assert listed.revision == await store.revision()


async def test_a_watch_outlives_the_servers_timeout(store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube, "WATCH_SECONDS", 1)  # the server ends each watch request after 1 s
    start = await store.revision()
    seen: list[str] = []

    async def collect() -> None:
        async for ev in store.watch(RESOURCE, start, namespace="ns"):
            seen.append(ev.object["metadata"]["name"])
            if len(seen) == 2:
                return

    task = asyncio.create_task(collect())
    await store.create(RESOURCE, thing("before"))
    await asyncio.sleep(2.5)  # two server timeouts later
    await store.create(RESOURCE, thing("after"))
    await asyncio.wait_for(task, 10)
    assert seen == ["before", "after"]


async def test_an_invalid_object_is_refused_naming_the_field(store) -> None:
    bad = thing("bad")
    bad["spec"]["tls"] = {"termination": "passthrough"}
    with pytest.raises(InvalidObject) as err:
        await store.create(RESOURCE, bad)
    assert err.value.field == "spec.path"
    with pytest.raises(NotFound):
        await store.get(RESOURCE, "ns", "bad")


async def test_a_create_in_a_namespace_the_server_lacks_names_the_namespace(store) -> None:
    with pytest.raises(NotFound) as err:
        await store.create(RESOURCE, thing("web", ns="nowhere"))
    assert str(err.value) == 'namespaces "nowhere" not found'
    assert (err.value.resource, err.value.name) == ("namespaces", "nowhere")
    assert (await store.list(RESOURCE)).items == []


async def test_a_kind_the_api_does_not_have_is_one_sentence(store) -> None:
    with pytest.raises(ConfigError, match='cannot hold "things"'):
        await store.list("things")


async def test_a_wrong_token_is_refused_in_one_sentence(api: APIServerProcess, tmp_path) -> None:
    config = yaml.safe_load(api.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "not-the-token"
    path = tmp_path / "wrong"
    path.write_text(yaml.safe_dump(config))
    st = open_store(f"kube://{path}")
    try:
        with pytest.raises(StoreUnavailable, match=r"refused list routes.*401"):
            await st.list(RESOURCE)
    finally:
        await st.close()


async def test_an_unreachable_server_is_one_sentence(api: APIServerProcess, tmp_path) -> None:
    config = yaml.safe_load(api.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    path = tmp_path / "nowhere"
    path.write_text(yaml.safe_dump(config))
    st = open_store(f"kube://{path}")
    try:
        with pytest.raises(StoreUnavailable, match="cannot reach the API server at https://127"):
            await st.get(RESOURCE, "ns", "a")
    finally:
        await st.close()


async def test_a_missing_kubeconfig_is_one_sentence(tmp_path) -> None:
    st = open_store(f"kube://{tmp_path}/nope")
    with pytest.raises(ConfigError, match=f"kubeconfig {tmp_path}/nope does not exist"):
        await st.revision()
    await st.close()


def test_the_cli_takes_kubeconfig_and_refuses_it_next_to_store(
    api: APIServerProcess, tmp_path
) -> None:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    api.ok("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    got = subprocess.run(
        [
            SHIFTNET,
            "--kubeconfig",
            str(api.kubeconfig),
            "--state-dir",
            str(tmp_path / "h"),
            "get",
            "namespaces",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    assert "shop" in got.stdout
    both = subprocess.run(
        [
            SHIFTNET,
            "--store",
            "sqlite:///x.db",
            "--kubeconfig",
            str(api.kubeconfig),
            "get",
            "routes",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert both.returncode != 0
    assert both.stderr.strip().splitlines() == [
        "error: --store and --kubeconfig both name the store: give one "
        "(--kubeconfig PATH is --store kube://PATH)"
    ]
    assert not Path("x.db").exists()


async def test_an_update_sends_only_the_writes_its_change_needs(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A router may update ``routes/status`` and not ``routes`` (RBAC grants them apart):
    a status-only change must be one ``/status`` request, a spec change one plain one."""
    sent: list[str] = []
    real = ResourceCalls.replace

    def spy(self: ResourceCalls, *args: Any, status: bool = False, **opts: Any) -> Any:
        sent.append("status" if status else "object")
        return real(self, *args, status=status, **opts)

    monkeypatch.setattr(ResourceCalls, "replace", spy)
    made = await store.create(RESOURCE, thing("a", n=1))
    admitted = await store.update(RESOURCE, {**made, "status": ADMITTED})
    assert (sent, admitted["status"]) == (["status"], ADMITTED)
    sent.clear()
    moved = await store.update(RESOURCE, renumbered(admitted, 2))
    assert (sent, number(moved), moved["status"]) == (["object"], 2, ADMITTED)
    sent.clear()
    both = renumbered(moved, 3)
    both.pop("status")
    cleared = await store.update(RESOURCE, both)
    assert (sent, number(cleared), "status" in cleared) == (["object", "status"], 3, False)
    sent.clear()
    same = await store.update(RESOURCE, cleared)
    assert (sent, same["metadata"]["resourceVersion"]) == (
        [],
        cleared["metadata"]["resourceVersion"],
    )
