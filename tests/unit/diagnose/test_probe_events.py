"""The pod check's fix names the pod's last probe failure, read from its ``Unhealthy`` Events."""

from __future__ import annotations

import dataclasses

from tests.unit.diagnose.test_route_checks import first, healthy, service

from shiftnet.api import Event
from shiftnet.diagnose.probe_events import last_probe_failures
from shiftnet.diagnose.route_checks import diagnose_route
from shiftnet.diagnose.route_facts import BackendService, PodView
from shiftnet.diagnose.service_checks import diagnose_service


def event(pod: str, reason: str, message: str, last: str, kind: str = "Pod") -> Event:
    return Event.model_validate(
        {
            "metadata": {"name": f"{pod}.{last}", "namespace": "ns"},
            "involvedObject": {"kind": kind, "name": pod, "namespace": "ns"},
            "reason": reason,
            "message": message,
            "lastTimestamp": last,
            "type": "Warning",
        }
    )


def test_the_most_recent_unhealthy_event_of_each_pod_in_the_probes_words() -> None:
    events = [
        event("web-1", "Unhealthy", "Readiness probe failed: timed out", "2026-01-01T00:00:02Z"),
        event(
            "web-1",
            "Unhealthy",
            "Readiness probe failed: connection refused",
            "2026-01-01T00:00:05Z",
        ),
        event("web-1", "BackOff", "Back-off restarting", "2026-01-01T00:00:09Z"),
        event("web-2", "Unhealthy", "exit status 3", "2026-01-01T00:00:01Z"),
        event("web-3", "Unhealthy", "Readiness probe failed: x", "2026-01-01T00:00:01Z", "Route"),
    ]
    assert last_probe_failures(events) == {
        "web-1": "connection refused",
        "web-2": "exit status 3",
    }
    assert last_probe_failures([]) == {}


def test_pod_check_fix_names_the_last_probe_failure() -> None:
    pods = (
        PodView("web-1", False, "containers not ready", "connection refused"),
        PodView("web-2", False, "containers not ready"),
    )
    svc = BackendService("web", True, {"app": "web"}, (), pods)
    number, found, fix = first(healthy(services=(svc,)))
    assert number == 7 and "0 of 2 pods pass their readiness probe" in found
    assert fix.startswith("pod `web-1` last probe: connection refused; ")
    # Without an Unhealthy Event the fix points at the pod's log, naming no probe.
    plain = dataclasses.replace(
        svc, pods=tuple(dataclasses.replace(p, last_probe="") for p in pods)
    )
    assert "last probe" not in first(healthy(services=(plain,)))[2]
    report = diagnose_service(service(ready=(), pods=pods))
    failed = report.first_failure
    assert failed is not None and "pod `web-1` last probe: connection refused" in failed.fix
    assert diagnose_route(healthy()).ok
