"""kube-proxy's health checks from a real ``shiftnet proxy`` process on a real store.

A LoadBalancer Service with ``externalTrafficPolicy: Local`` is served on its
``healthCheckNodePort`` with kube-proxy's JSON body and headers; user-space mode
never opens such a Service's node port, so it answers 503 with no local endpoint
even when this node runs one (the kernel modes count them:
``test_kernel_health_check.py``); the port closes when the Service goes;
the proxy's own ``/healthz`` and ``/livez``; thousands of short connections
leave no descriptor behind; names written around the API never break the JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.leaks import LeakProbe
from tests.support.ports import free_port
from tests.support.proxy_process import REPLY, ClosingBackend, proxy_process, random_vip

from shiftnet.api import Endpoints, Service
from shiftnet.client import Client
from shiftnet.errors import ShiftnetError
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

NODE = "n1"


def lb_service(name: str, vip: str, port: int, hc_port: int) -> Service:
    return Service.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "type": "LoadBalancer",
                "externalTrafficPolicy": "Local",
                "healthCheckNodePort": hc_port,
                "clusterIP": vip,
                "ports": [{"name": "main", "port": port}],
            },
        }
    )


def endpoints(name: str, addresses: list[tuple[str, str]], port: int = 9) -> Endpoints:
    """Ready ``(ip, nodeName)`` addresses on one port."""
    return Endpoints.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "subsets": [
                {
                    "addresses": [{"ip": ip, "nodeName": node} for ip, node in addresses],
                    "ports": [{"name": "main", "port": port}],
                }
            ],
        }
    )


def get(
    port: int, path: str = "/healthz", method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path)
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


def closed(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
    except ConnectionRefusedError:
        return True
    return False


async def until(check: Any, timeout: float = 10.0) -> Any:
    """Poll ``check()`` (a blocking call) until it returns something truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        with contextlib.suppress(OSError):
            value = await asyncio.to_thread(check)
            if value:
                return value
        if loop.time() > deadline:
            raise AssertionError(f"not reached within {timeout}s")
        await asyncio.sleep(0.05)


async def replace(client: Client, obj: Any) -> None:
    existing = await client.try_get(type(obj), "default", obj.metadata.name)
    if existing is None:
        await client.create(obj)
        return
    obj.metadata.resource_version = existing.metadata.resource_version
    await client.update(obj)


@pytest.fixture
async def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A store with Service ``web`` (LB, Local, health check port), a proxy on node n1."""
    vip = random_vip()
    port, hc_port, healthz = free_port(vip), free_port(), free_port()
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    await client.create(lb_service("web", vip, port, hc_port))
    await client.create(endpoints("web", [("127.0.0.2", "n2")]))  # not on this node
    args = ("--hostname-override", NODE, "--nodeport-addresses", "127.0.0.1")
    try:
        with proxy_process(
            tmp_path, vip, port, *args, "--healthz-bind-address", f"127.0.0.1:{healthz}"
        ) as pid:
            yield client, pid, hc_port, healthz
    finally:
        await store.close()


async def test_user_space_answers_503_even_with_a_local_endpoint_and_closes_with_the_service(
    cluster: Any,
) -> None:
    """User-space refuses ``externalTrafficPolicy: Local`` (its node port is never opened),
    so the health check reports what outside traffic gets here: no local endpoint."""
    client, _, hc_port, _ = cluster
    status, headers, body = await until(lambda: get(hc_port))
    assert status == 503
    assert headers["content-type"] == "application/json"
    assert headers["x-content-type-options"] == "nosniff"
    refused = {
        "service": {"namespace": "default", "name": "web"},
        "localEndpoints": 0,
        "serviceProxyHealthy": True,
    }
    assert json.loads(body) == refused
    # a ready endpoint on this node appears, and the proxy relays its ClusterIP to it
    backend = await ClosingBackend("127.0.0.3").start()
    try:
        await replace(client, endpoints("web", [("127.0.0.3", NODE)], port=backend.port))
        svc = await client.get(Service, "default", "web")
        vip, port = str(svc.spec.cluster_ip), svc.spec.ports[0].port
        await until(lambda: relay_once(vip, port))
        # ... yet every answer, on any path and method, stays 503 with no local endpoint
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 1.0
        while loop.time() < deadline:
            status, _, body = await asyncio.to_thread(get, hc_port, "/any/path")
            assert (status, json.loads(body)) == (503, refused)
            await asyncio.sleep(0.05)
        status, headers, body = get(hc_port, "/", method="HEAD")
        assert status == 503 and body == b"" and headers["content-type"] == "application/json"
    finally:
        await backend.stop()
    # the Service goes back to the Cluster policy: the port closes
    svc = await client.get(Service, "default", "web")
    svc.spec.external_traffic_policy = "Cluster"
    svc.spec.health_check_node_port = None
    await client.update(svc)
    await until(lambda: closed(hc_port))
    # Local again, then deleted: open, then closed
    svc = await client.get(Service, "default", "web")
    svc.spec.external_traffic_policy = "Local"
    svc.spec.health_check_node_port = hc_port
    await client.update(svc)
    await until(lambda: get(hc_port)[0] == 503)
    await client.delete(Service, "default", "web")
    await until(lambda: closed(hc_port))


def relay_once(vip: str, port: int) -> bool:
    """One request through the Service's ClusterIP: True once it reaches the backend."""
    with socket.create_connection((vip, port), 2) as conn:
        conn.sendall(b"ping\n")
        return conn.recv(16) == REPLY


async def test_proxy_healthz_and_livez(cluster) -> None:  # type: ignore[no-untyped-def]
    _, _, _, healthz = cluster
    for path in ("/healthz", "/livez"):
        status, headers, body = await until(lambda p=path: get(healthz, p))
        assert status == 200, body
        assert headers["content-type"] == "application/json"
        answer = json.loads(body)
        assert set(answer) == {"lastUpdated", "currentTime"}
        assert answer["lastUpdated"] and answer["currentTime"] >= answer["lastUpdated"]
    assert get(healthz, "/metrics")[0] == 404


async def hit(port: int, how: int) -> bool:
    """One short connection: a full request (most), nothing at all, or a garbage head."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if how == 0:
            return True  # connect and leave
        if how == 1:
            writer.write(b"\x00" * 9000)  # past the head limit: 400, closed
        else:
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n")
        data = await asyncio.wait_for(reader.read(), 5)
        return data.startswith(b"HTTP/1.1 400 " if how == 1 else b"HTTP/1.1 503 ")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_thousands_of_health_checks_leave_no_descriptors(cluster) -> None:  # type: ignore[no-untyped-def]
    _, pid, hc_port, _ = cluster
    await until(lambda: get(hc_port))
    connections, concurrency = 2400, 16
    queue = iter(range(connections))

    async def worker() -> int:
        ok = 0
        for i in queue:
            how = 0 if i % 8 == 0 else 1 if i % 8 == 1 else 2
            ok += await hit(hc_port, how)
        return ok

    assert sum(await asyncio.gather(*(worker() for _ in range(concurrency)))) >= 200  # warm-up
    queue = iter(range(connections))
    probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=8 * 1024)
    answered = sum(await asyncio.gather(*(worker() for _ in range(concurrency))))
    assert answered == connections
    await probe.settled()
    print(probe.summary())


HOSTILE_NAMES = [
    'a"b',
    'x", "localEndpoints": 99, "y": "',
    "back\\slash",
    "new\nline",
    "tab\there",
    "</script><script>alert(1)</script>",
    "ünïcødé-名前",
    "\u2028\u2029",
    "{}",
]


async def test_hostile_names_never_break_the_json(cluster) -> None:  # type: ignore[no-untyped-def]
    client, _, _, _ = cluster
    store = client.store
    served: dict[int, str] = {}
    for i, name in enumerate(HOSTILE_NAMES):
        port = free_port()
        body = lb_service("placeholder", f"127.30.250.{i + 2}", 80, port).to_dict()
        body["metadata"]["name"] = name
        with pytest.raises(ShiftnetError):
            await client.create(Service.model_validate(body))  # the API refuses it ...
        try:
            await store.create("services", body)  # ... a broken writer does not
        except ShiftnetError:
            continue  # the store itself refused the name: nothing to serve
        served[port] = name
    assert len(served) >= 6, served
    for port, name in served.items():
        status, headers, body = await until(lambda p=port: get(p))
        assert status == 503 and headers["content-type"] == "application/json"
        assert json.loads(body) == {
            "service": {"namespace": "default", "name": name},
            "localEndpoints": 0,
            "serviceProxyHealthy": True,
        }, body


async def test_a_port_that_cannot_be_bound_is_logged_and_the_rest_served(
    cluster: Any, tmp_path: Path
) -> None:
    client, _, hc_port, _ = cluster
    with socket.socket() as squatter:  # another program holds this one
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(1)
        held = squatter.getsockname()[1]
        await client.create(lb_service("blocked", "127.30.251.2", 80, held))
        await client.create(lb_service("twin", "127.30.251.3", 80, hc_port))  # web's port
        other = free_port()
        await client.create(lb_service("fine", "127.30.251.4", 80, other))
        await until(lambda: get(other)[0] == 503)
        log = tmp_path / "proxy.log"
        await until(lambda: "service=default/blocked" in log.read_text())
        text = log.read_text()
        assert (
            f"health check port not bound service=default/blocked address=127.0.0.1 port={held}"
            in text
        )
        assert "health check port not bound service=default/twin" in text
        assert json.loads(get(hc_port)[2])["service"]["name"] == "web"  # the first keeps it
    # once the squatter is gone, a later sync binds it
    await client.create(lb_service("nudge", "127.30.251.5", 80, free_port()))
    _, _, body = await until(lambda: get(held))
    assert json.loads(body)["service"]["name"] == "blocked"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_bad_healthz_address_is_one_sentence(tmp_path: Path, how: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    args = ["--healthz-bind-address", "nowhere:99999"] if how == "flag" else []
    if how == "env":
        env["SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS"] = "nowhere:99999"
    res = subprocess.run(
        [sys.executable, "-m", "shiftnet.cli.main", "--state-dir", str(tmp_path),
         "--store", f"sqlite:///{tmp_path}/state.db", "proxy", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert res.returncode == 1
    assert res.stderr.strip() == (
        "error: --healthz-bind-address (SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS) must be an IPv4 "
        "ADDR:PORT, not 'nowhere:99999'"
    )
    assert not (tmp_path / "state.db").exists(), "nothing was started"


def test_a_bad_healthz_address_stops_shiftnet_up_before_it_starts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS"] = "nowhere:99999"
    res = subprocess.run(
        [sys.executable, "-m", "shiftnet.cli.main", "--state-dir", str(tmp_path / "state"),
         "--store", f"sqlite:///{tmp_path}/state.db", "up"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert res.returncode == 1
    assert res.stderr.strip() == (
        "error: --healthz-bind-address (SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS) must be an IPv4 "
        "ADDR:PORT, not 'nowhere:99999'"
    )
    assert not (tmp_path / "state.db").exists() and not (tmp_path / "state").exists()


async def test_under_shiftnet_up_healthz_is_on_a_free_loopback_port_named_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shiftnet.cluster import ClusterConfig, LocalCluster, MasterComponent, StoreComponent
    from shiftnet.proxy.component import ProxyComponent

    monkeypatch.delenv("SHIFTNET_PROXY_HEALTHZ_BIND_ADDRESS", raising=False)
    config = ClusterConfig(
        state_dir=tmp_path, store_url=f"sqlite:///{tmp_path}/state.db", node_name="n1"
    )
    cluster = LocalCluster(config, components=[StoreComponent, MasterComponent, ProxyComponent])
    await cluster.start()
    try:
        summary = cluster.component("proxy").summary()  # type: ignore[union-attr]
        url = summary.split("healthz on ", 1)[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/healthz"), summary
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert port != 10256
        status, _, _ = await until(lambda: get(port))
        assert status == 200
    finally:
        await cluster.stop()


async def test_silent_and_slow_clients_are_closed_after_the_read_timeout(cluster) -> None:  # type: ignore[no-untyped-def]
    """50 clients that connect and send nothing (or half a request head) cannot hold the
    proxy's descriptors: each is closed after 5 s without an answer."""
    _, pid, hc_port, _ = cluster
    await until(lambda: get(hc_port))
    probe = LeakProbe(pid, name="shiftnet proxy", rss_growth_kib=8 * 1024)
    loop = asyncio.get_running_loop()
    started = loop.time()
    clients = [await asyncio.open_connection("127.0.0.1", hc_port) for _ in range(50)]
    for i, (_, writer) in enumerate(clients):
        if i % 2:
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: sl")  # never finished
    answers = await asyncio.gather(*(asyncio.wait_for(r.read(), 10) for r, _ in clients))
    assert answers == [b""] * 50  # closed, nothing said
    assert 4.5 < loop.time() - started < 9
    for _, writer in clients:
        writer.close()
    assert get(hc_port)[0] == 503  # still serving
    await probe.settled()
