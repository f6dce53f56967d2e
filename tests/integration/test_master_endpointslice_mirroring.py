"""EndpointSlice mirroring on real stores: user Endpoints become slices; readers unchanged."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from tests.support.lagging_store import lagging_controller
from tests.support.master import eventually, running_master, service
from tests.support.scrape import scrape
from tests.support.stores import etcd_server, store_url  # noqa: F401

from shiftnet.api import Endpoints, EndpointSlice, Event, Service, parse_object
from shiftnet.client import Client
from shiftnet.informer import Informers
from shiftnet.master import MasterConfig, metrics
from shiftnet.master.endpointslice_mirroring import EndpointSliceMirroringController
from shiftnet.metrics_endpoint import MetricsEndpoint
from shiftnet.service_endpoints import ServiceEndpoints
from shiftnet.store import open_store

pytestmark = pytest.mark.integration

MIRROR = "endpointslicemirroring-controller.k8s.io"
HTTP = [{"name": "http", "port": 8080}]


def endpoints(name: str, subsets: list[dict[str, Any]], **meta: Any) -> Endpoints:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": "default", **meta},
            "subsets": subsets,
        }
    )
    assert isinstance(obj, Endpoints)
    return obj


def addrs(*ips: str) -> list[dict[str, str]]:
    return [{"ip": ip} for ip in ips]


async def slices(client: Client, name: str = "ext") -> list[EndpointSlice]:
    found = await client.list(EndpointSlice, "default", f"kubernetes.io/service-name={name}")
    return sorted(found, key=lambda s: s.name)


def mirrored(found: list[EndpointSlice]) -> list[EndpointSlice]:
    return [
        s
        for s in found
        if s.metadata.labels.get("endpointslice.kubernetes.io/managed-by") == MIRROR
    ]


def content(found: list[EndpointSlice]) -> set[tuple[str, tuple[Any, ...], str, bool]]:
    return {
        (
            s.address_type,
            tuple(sorted((p.name, p.port, p.protocol) for p in s.ports)),
            a,
            e.conditions.is_ready,
        )
        for s in found
        for e in s.endpoints
        for a in e.addresses
    }


async def test_user_endpoints_are_mirrored_and_follow_their_endpoints_and_service(
    store_url: str,  # noqa: F811
) -> None:
    async with running_master(store_url) as (_, client):
        await client.create(service("ext", ports=[{"name": "http", "port": 80}]))
        theirs = parse_object(
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "ext-by-hand",
                    "namespace": "default",
                    "labels": {
                        "kubernetes.io/service-name": "ext",
                        "endpointslice.kubernetes.io/managed-by": "someone",
                    },
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["127.30.9.9"]}],
                "ports": [{"name": "http", "port": 8080}],
            }
        )
        assert isinstance(theirs, EndpointSlice)
        theirs = await client.create(theirs)
        ep = await client.create(
            endpoints(
                "ext",
                [
                    {
                        "addresses": [{"ip": "127.30.0.2", "hostname": "a"}],
                        "notReadyAddresses": addrs("127.30.0.3"),
                        "ports": HTTP,
                    }
                ],
                labels={"team": "a"},
                annotations={"note": "kept"},
            )
        )
        [es] = mirrored(await eventually(lambda: slices(client), lambda s: len(mirrored(s)) == 1))
        assert content([es]) == {
            ("IPv4", (("http", 8080, "TCP"),), "127.30.0.2", True),
            ("IPv4", (("http", 8080, "TCP"),), "127.30.0.3", False),
        }
        assert es.name.startswith("ext-") and len(es.name) == 9
        assert es.metadata.labels["team"] == "a" and es.metadata.annotations == {"note": "kept"}
        [owner] = es.metadata.owner_references or []
        assert (owner.kind, owner.name, owner.uid) == ("Endpoints", "ext", ep.metadata.uid)

        # the Endpoints changes: the same slice follows
        def grow(e: Endpoints) -> Endpoints:
            e.subsets[0].addresses.append(e.subsets[0].not_ready_addresses.pop())
            return e

        await client.mutate(Endpoints, "default", "ext", grow)
        [es2] = mirrored(
            await eventually(
                lambda: slices(client),
                lambda s: all(x[3] for x in content(mirrored(s))) and len(mirrored(s)) == 1,
            )
        )
        assert es2.name == es.name

        # skip-mirror: the slices go; without it they come back
        def label(value: str | None) -> Any:
            def change(e: Endpoints) -> Endpoints:
                if value is None:
                    e.metadata.labels.pop("endpointslice.kubernetes.io/skip-mirror", None)
                else:
                    e.metadata.labels["endpointslice.kubernetes.io/skip-mirror"] = value
                return e

            return change

        await client.mutate(Endpoints, "default", "ext", label("true"))
        await eventually(lambda: slices(client), lambda s: mirrored(s) == [])
        await client.mutate(Endpoints, "default", "ext", label(None))
        await eventually(lambda: slices(client), lambda s: len(mirrored(s)) == 1)

        # the Service gets a selector: its Endpoints are the master's now, nothing is mirrored
        def select(s: Service) -> Service:
            s.spec.selector = {"app": "ext"}
            return s

        await client.mutate(Service, "default", "ext", select)
        await eventually(lambda: slices(client), lambda s: mirrored(s) == [])
        await eventually(  # no pod selected: the Endpoints controller emptied it
            lambda: client.get(Endpoints, "default", "ext"), lambda e: e.subsets == []
        )

        def unselect(s: Service) -> Service:
            s.spec.selector = None
            return s

        await client.mutate(Service, "default", "ext", unselect)
        await client.delete(Endpoints, "default", "ext")  # the Endpoints controller's leftovers
        await client.create(endpoints("ext", [{"addresses": addrs("127.30.0.5"), "ports": HTTP}]))
        await eventually(
            lambda: slices(client),
            lambda s: {x[2] for x in content(mirrored(s))} == {"127.30.0.5"},
        )
        # the Endpoints goes: so do its slices; the hand-written slice stays as it was
        await client.delete(Endpoints, "default", "ext")
        await eventually(lambda: slices(client), lambda s: mirrored(s) == [])
        await client.delete(Service, "default", "ext")
        left = await client.get(EndpointSlice, "default", "ext-by-hand")
        assert left.metadata.resource_version == theirs.metadata.resource_version


def view(ep: Endpoints | None) -> list[tuple[tuple[Any, ...], str, bool]]:
    """What a reader serves: (ports, address, ready), order-free."""
    if ep is None:
        return []
    return sorted(
        (tuple(sorted((p.name or "", p.port, p.protocol) for p in s.ports)), a.ip, ready)
        for s in ep.subsets
        for ready, group in ((True, s.addresses), (False, s.not_ready_addresses))
        for a in group
    )


async def test_readers_see_the_same_endpoints_before_while_and_after_mirroring(
    store_url: str,  # noqa: F811
) -> None:
    """Several slices are written one by one, and one subset is over the 1000 mirrored:
    the view the proxy, router and DNS share never loses or doubles an endpoint."""
    many = [f"127.31.{i // 250}.{i % 250 + 1}" for i in range(1005)]
    subsets = [
        {"addresses": addrs(*many), "ports": HTTP},
        {
            "addresses": addrs("127.32.0.1", "fd00::1"),
            "notReadyAddresses": addrs("127.32.0.2"),
            "ports": [{"name": "metrics", "port": 9100}],
        },
        {
            "addresses": addrs("127.33.0.1"),
            "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}],
        },
    ]
    setup = open_store(store_url)
    watch = open_store(store_url)
    informers = Informers(watch)
    readers = ServiceEndpoints(informers)
    seen: list[list[tuple[tuple[Any, ...], str, bool]]] = []

    def record(etype: str, old: Endpoints | None, new: Endpoints | None) -> None:
        if new is not None and new.name == "ext":
            seen.append(view(new))

    readers.add_handler(record)
    try:
        client = Client(setup)
        await client.create(service("ext", ports=[{"name": "http", "port": 80}]))
        await client.create(endpoints("ext", subsets))
        await informers.start()
        before = await eventually(
            lambda: _get(readers), lambda v: len(v) == 1005 + 3 + 1, timeout=30
        )
        seen.clear()
        async with running_master(store_url) as (_, mclient):
            found = await eventually(
                lambda: slices(mclient), lambda s: len(mirrored(s)) == 4, timeout=60
            )
            # the slices hold what upstream mirrors: 1000 of the big subset
            assert sorted(len(s.endpoints) for s in mirrored(found)) == [1, 1, 2, 1000]
            await eventually(  # the reader's cache has every slice too
                lambda: _slices_seen(readers), lambda n: n == 4, timeout=30
            )
            assert await _get(readers) == before
            events = await eventually(
                lambda: mclient.list(Event, "default"),
                lambda evs: any(e.reason == "TooManyAddressesToMirror" for e in evs),
                timeout=30,
            )
            [warning] = [e for e in events if e.reason == "TooManyAddressesToMirror"]
            assert (warning.involved_object.kind, warning.involved_object.name) == (
                "Endpoints",
                "ext",
            )
            assert warning.type == "Warning" and "5 addresses were skipped" in (
                warning.message or ""
            )
        assert all(v == before for v in seen), "a reader saw a partial or doubled view"
    finally:
        await informers.stop()
        await watch.close()
        await setup.close()


async def _get(readers: ServiceEndpoints) -> list[tuple[tuple[Any, ...], str, bool]]:
    return view(readers.get("default", "ext"))


async def _slices_seen(readers: ServiceEndpoints) -> int:
    return len(mirrored(readers.slices.list("default")))


async def test_a_restarted_master_keeps_its_slices_and_drops_stale_ones(
    store_url: str,  # noqa: F811
) -> None:
    async with running_master(store_url) as (_, client):
        for name in ("ext", "gone"):
            await client.create(service(name, ports=[{"name": "http", "port": 80}]))
            await client.create(
                endpoints(name, [{"addresses": addrs("127.34.0.1"), "ports": HTTP}])
            )
        for name in ("ext", "gone"):
            await eventually(partial(slices, client, name), lambda s: len(mirrored(s)) == 1)
        [kept] = mirrored(await slices(client))
    client = Client(open_store(store_url))  # the master is down: its Endpoints goes
    try:
        await client.delete(Endpoints, "default", "gone")
    finally:
        await client.store.close()
    async with running_master(store_url) as (master, client):
        await eventually(lambda: slices(client, "gone"), lambda s: mirrored(s) == [])
        await master.endpoint_slice_mirroring.queue.wait_idle()
        [same] = mirrored(await slices(client))
        assert (same.name, same.metadata.resource_version) == (
            kept.name,
            kept.metadata.resource_version,
        )


LAG = 0.2  # seconds each slice event waits before the controller's cache sees it


async def test_no_second_slice_of_a_group_while_the_slice_cache_lags(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with lagging_controller(url, "endpointslices", LAG, EndpointSliceMirroringController) as (
        client,
        controller,
    ):
        twice: list[list[str]] = []

        async def watch_for_twins() -> None:
            while True:
                groups = [
                    (s.address_type, tuple((p.name, p.port) for p in s.ports))
                    for s in mirrored(await slices(client))
                ]
                if len(groups) != len(set(groups)):
                    twice.append([str(g) for g in groups])
                await asyncio.sleep(0.005)

        watcher = asyncio.create_task(watch_for_twins())
        try:
            await client.create(service("ext", ports=[{"name": "http", "port": 80}]))
            await client.create(
                endpoints("ext", [{"addresses": addrs("127.35.0.1"), "ports": HTTP}])
            )
            for i in range(2, 12):  # changes faster than the slice cache follows

                def add(e: Endpoints, i: int = i) -> Endpoints:
                    e.subsets[0].addresses.append(
                        e.subsets[0].addresses[0].model_copy(update={"ip": f"127.35.0.{i}"})
                    )
                    return e

                await client.mutate(Endpoints, "default", "ext", add)
                await asyncio.sleep(0.03)
            found = await eventually(
                lambda: slices(client),
                lambda s: len(content(mirrored(s))) == 11,
                timeout=30,
            )
            await controller.queue.wait_idle()
            assert len(mirrored(found)) == 1
        finally:
            watcher.cancel()
        assert not twice, f"one group had two slices at once: {twice[0]}"


async def test_the_mirrored_share_of_a_subset_is_a_master_setting(
    store_url: str,  # noqa: F811
) -> None:
    config = MasterConfig.build("local", mirroring_max_endpoints_per_subset=2)
    async with running_master(store_url, config) as (_, client):
        await client.create(service("ext", ports=[{"name": "http", "port": 80}]))
        await client.create(
            endpoints(
                "ext",
                [
                    {
                        "addresses": addrs("127.36.0.3", "127.36.0.1", "127.36.0.2"),
                        "notReadyAddresses": addrs("127.36.0.0"),
                        "ports": HTTP,
                    }
                ],
            )
        )
        [es] = mirrored(await eventually(lambda: slices(client), lambda s: len(mirrored(s)) == 1))
        assert [(e.addresses[0], e.conditions.ready) for e in es.endpoints] == [
            ("127.36.0.1", True),
            ("127.36.0.2", True),
        ]


@pytest.mark.parametrize("value", ["0", "1001", "many"])
def test_a_bad_mirroring_setting_is_one_sentence_and_starts_nothing(
    tmp_path: Path, value: str
) -> None:
    shiftnet = Path(sys.executable).with_name("shiftnet")
    state = tmp_path / "state"
    done = subprocess.run(
        [
            str(shiftnet),
            "--state-dir",
            str(state),
            "master",
            "--mirroring-max-endpoints-per-subset",
            value,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()
    assert "mirroring" in line and "1 to 1000" in line and "Traceback" not in done.stderr
    assert not state.exists() or not any(state.iterdir())


async def test_mirrored_writes_are_counted_apart_from_the_service_controllers(
    tmp_path: Path,
) -> None:
    """``shiftnet_master_endpointslice_mirroring_writes_total``, scraped over HTTP, counts
    each slice the mirroring controller creates or updates; the EndpointSlice
    controller's counter does not move for slices it did not write."""
    endpoint = MetricsEndpoint(":0", [metrics.REGISTRY])
    mirroring = "shiftnet_master_endpointslice_mirroring_writes_total"
    controller = "shiftnet_master_endpointslice_writes_total"

    async def counted() -> tuple[float, float]:
        found = await asyncio.to_thread(scrape, endpoint.url)
        return found.value(mirroring) or 0.0, found.value(controller) or 0.0

    try:
        async with running_master(f"sqlite:///{tmp_path}/state.db") as (_, client):
            await client.create(service("ext", ports=[{"name": "http", "port": 80}]))
            before = await counted()
            ep = await client.create(
                endpoints("ext", [{"addresses": addrs("127.30.0.2"), "ports": HTTP}])
            )
            await eventually(lambda: slices(client), lambda found: len(mirrored(found)) == 1)
            created = await eventually(counted, lambda n: n[0] >= before[0] + 1)
            assert created == (before[0] + 1, before[1])
            more = [{"addresses": addrs("127.30.0.2", "127.30.0.3"), "ports": HTTP}]
            ep.subsets = endpoints("ext", more).subsets
            await client.update(ep)
            await eventually(lambda: slices(client), lambda found: len(content(found)) == 2)
            updated = await eventually(counted, lambda n: n[0] >= before[0] + 2)
            assert updated == (before[0] + 2, before[1])
    finally:
        endpoint.stop()
