"""The node agent's Events on real pod processes: failing probes folded, restarts said.

A readiness probe that fails every second leaves one ``Unhealthy`` Event on
the pod whose ``count`` grows (not one object per failure), which ``shiftnet
describe pod`` shows folded; a container that keeps exiting gets ``Started``
(count > 1) and ``BackOff``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from tests.support.cli import Shiftnet
from tests.support.node import NodeHarness, script_pod

from shiftnet.api import Event, Pod

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeHarness]:
    h = NodeHarness(tmp_path)
    try:
        await h.start()
        yield h
    finally:
        await h.close()


async def pod_events(node: NodeHarness, name: str) -> dict[str, Event]:
    pod = await node.client.get(Pod, "default", name)
    found = await node.client.list(Event, "default")
    mine = [
        e
        for e in found
        if e.involved_object.kind == "Pod"
        and e.involved_object.name == name
        and e.involved_object.uid == pod.metadata.uid
    ]
    by_reason: dict[str, list[Event]] = {}
    for e in mine:
        by_reason.setdefault(e.reason or "", []).append(e)
    for reason, events in by_reason.items():
        assert len(events) == 1, f"{reason} not folded: {events}"
    return {reason: events[0] for reason, events in by_reason.items()}


async def until(
    node: NodeHarness, name: str, done: Callable[[dict[str, Event]], bool], timeout: float = 30
) -> dict[str, Event]:
    deadline = time.monotonic() + timeout
    while not done(found := await pod_events(node, name)):
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.2)
    return found


async def test_a_failing_readiness_probe_is_one_unhealthy_event_counting_up(
    node: NodeHarness,
) -> None:
    probe = {"tcpSocket": {"port": 9}, "periodSeconds": 1}
    await node.client.create(script_pod("closed", "import time; time.sleep(300)", probe=probe))

    found = await until(
        node, "closed", lambda f: "Unhealthy" in f and (f["Unhealthy"].count or 0) >= 3
    )
    unhealthy = found["Unhealthy"]
    assert unhealthy.type == "Warning"
    assert (unhealthy.message or "").startswith("Readiness probe failed: dial tcp ")
    assert unhealthy.involved_object.field_path == "spec.containers{main}"
    assert unhealthy.source.component == "node" and unhealthy.source.host == node.node_name
    assert unhealthy.last_timestamp and unhealthy.first_timestamp
    assert unhealthy.last_timestamp > unhealthy.first_timestamp
    started = found["Started"]
    assert (started.type, started.message, started.count) == ("Normal", "Started container main", 1)

    # `shiftnet describe pod` ends with both, the probe's folded as kubectl shows it
    sn = Shiftnet(f"sqlite://{node.state_dir}/state.db", node.state_dir / "cli-home")
    shown = await asyncio.to_thread(sn.ok, "describe", "pod", "closed")
    tail = shown[shown.index("Events:") :].splitlines()
    assert tail[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    rows = {line.split()[1]: line for line in tail[3:]}
    assert set(rows) == {"Started", "Unhealthy"}, tail
    assert rows["Unhealthy"].split()[0] == "Warning"
    assert re.search(r" \(x\d+ over \d+s\) ", rows["Unhealthy"]), rows["Unhealthy"]
    assert f"node, {node.node_name}" in rows["Unhealthy"]
    assert "Readiness probe failed: dial tcp " in rows["Unhealthy"]


async def test_a_container_that_keeps_exiting_gets_started_and_back_off_events(
    node: NodeHarness,
) -> None:
    await node.client.create(script_pod("crash", "import sys; sys.exit(3)"))
    found = await until(
        node,
        "crash",
        lambda f: "BackOff" in f and "Started" in f and (f["Started"].count or 0) >= 2,
    )
    back_off = found["BackOff"]
    assert back_off.type == "Warning"
    assert back_off.message == "Back-off restarting failed container main"
