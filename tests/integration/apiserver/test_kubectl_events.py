"""Events as users read them: kubectl and shiftnet, over a real master's Events.

A real master on the API server's store fails to give a seventh Service a
ClusterIP (six addresses); ``kubectl get events`` / ``get ev`` show its
Warning in kubectl's columns, ``kubectl describe service`` ends with it (the
API server answers kubectl's involvedObject field selector), and
``shiftnet get events`` / ``shiftnet describe svc`` print the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess
from tests.support.cli import Shiftnet
from tests.support.master import eventually, running_master, service

from shiftnet.api import Event
from shiftnet.master import MasterConfig

pytestmark = pytest.mark.integration


def _without_age(table: str) -> list[list[str]]:
    """Each row's columns after LAST SEEN (whose value changes with time)."""
    return [line.split()[1:] for line in table.splitlines()[1:]]


async def test_kubectl_and_shiftnet_show_a_masters_event(
    api: APIServerProcess, tmp_path: Path
) -> None:
    small = MasterConfig.build(service_network="127.31.0.0/29")  # 6 usable addresses
    async with running_master(api.store, small) as (_, client):
        for i in range(7):
            await client.create(service(f"s{i}"))
        await eventually(
            lambda: client.list(Event),
            lambda evs: any(e.involved_object.name == "s6" for e in evs),
        )
        # a second, unrelated event, to see describe pick only its object's
        await client.create(service("other", cluster_ip="127.31.0.1"))
        await eventually(lambda: client.list(Event), lambda evs: len(evs) == 2)

    table = api.ok("get", "events").splitlines()
    assert table[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    row = next(line for line in table if "service/s6" in line)
    assert row.split()[1:4] == ["Warning", "ClusterIPNotAllocated", "service/s6"]
    assert "range is full" in row
    # the same rows under the short name; LAST SEEN is left out (an age can tick between calls)
    assert _without_age(api.ok("get", "ev")) == _without_age(api.ok("get", "events"))
    wide = api.ok("get", "events", "-o", "wide").splitlines()
    assert "SOURCE" in wide[0] and "COUNT" in wide[0]

    described = api.ok("describe", "service", "s6")
    events = described[described.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[3].split()[:2] == ["Warning", "ClusterIPNotAllocated"]
    assert "master" in events[3] and len(events) == 4
    assert "Events:" in api.ok("describe", "service", "s0")

    cli = Shiftnet(store=api.store, home=tmp_path / "cli-home")
    ours = cli.ok("get", "events").splitlines()
    assert ours[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("service/s6" in line and "ClusterIPNotAllocated" in line for line in ours)
    shown = cli.ok("describe", "svc", "s6")
    tail = shown[shown.index("Events:") :].splitlines()
    assert tail[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert tail[3].split()[:2] == ["Warning", "ClusterIPNotAllocated"] and len(tail) == 4
    assert "Events:  <none>" in cli.ok("describe", "svc", "s0")
