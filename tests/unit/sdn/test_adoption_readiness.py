"""What an adopted container starts from: the readiness the store last reported."""

from __future__ import annotations

from typing import Any

from shiftnet.api import Pod, Probe, parse_object
from shiftnet.sdn.pods import last_readiness
from shiftnet.sdn.probes import ProbeResult, ProbeTracker


def pod(phase: str, ready: dict[str, bool]) -> Pod:
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": n, "command": ["x"]} for n in ready]},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {"name": n, "ready": r, "restartCount": 0} for n, r in ready.items()
            ],
        },
    }
    return parse_object(raw)  # type: ignore[return-value]


def test_a_ready_tracker_needs_failure_threshold_failures_to_turn() -> None:
    t = ProbeTracker(Probe(failure_threshold=3), ready=True)
    bad = ProbeResult(False, "refused")
    assert not t.record(bad) and not t.record(bad) and t.ready
    assert t.record(bad) and not t.ready


def test_last_readiness_comes_from_a_running_pods_container_statuses() -> None:
    assert last_readiness(pod("Running", {"web": True, "side": False})) == {
        "web": True,
        "side": False,
    }
    # A pod its agent stopped is Pending: nothing is assumed about it.
    assert last_readiness(pod("Pending", {"web": True})) == {}
    assert last_readiness(pod("Succeeded", {"web": True})) == {}
