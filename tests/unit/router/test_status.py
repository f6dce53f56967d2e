"""Status entries: written only when content other than timestamps differs."""

from __future__ import annotations

from shiftnet.api import Route, RouteIngress, RouteIngressCondition
from shiftnet.router.status import merged, needs_write, without_entry


def _route(*entries: RouteIngress) -> Route:
    r = Route.model_validate(
        {"metadata": {"name": "r", "namespace": "ns"}, "spec": {"host": "h", "to": {"name": "s"}}}
    )
    r.status.ingress = list(entries)
    return r


def _entry(router: str, status: str, reason: str | None = None, when: str | None = None):  # type: ignore[no-untyped-def]
    cond = RouteIngressCondition(
        type="Admitted", status=status, reason=reason, last_transition_time=when
    )
    return RouteIngress(host="h", router_name=router, conditions=[cond])


def test_same_content_different_time_is_not_written() -> None:
    route = _route(_entry("router", "True", when="2020-01-01T00:00:00Z"))
    assert not needs_write(route, _entry("router", "True"))
    assert merged(route, _entry("router", "True"), "2030-01-01T00:00:00Z") is None


def test_changed_condition_gets_new_time_and_others_are_kept() -> None:
    other = _entry("other-router", "True", when="2020-01-01T00:00:00Z")
    route = _route(other, _entry("router", "True", when="2020-01-01T00:00:00Z"))
    out = merged(route, _entry("router", "False", "HostAlreadyClaimed"), "2030-01-01T00:00:00Z")
    assert out is not None
    assert [e.router_name for e in out.status.ingress] == ["other-router", "router"]
    assert out.status.ingress[0] == other
    cond = out.status.ingress[1].conditions[0]
    assert (cond.status, cond.reason, cond.last_transition_time) == (
        "False",
        "HostAlreadyClaimed",
        "2030-01-01T00:00:00Z",
    )


def test_unchanged_status_keeps_its_time_when_message_changes() -> None:
    route = _route(_entry("router", "True", when="2020-01-01T00:00:00Z"))
    desired = _entry("router", "True")
    desired.conditions[0].message = "annotation ignored"
    out = merged(route, desired, "2030-01-01T00:00:00Z")
    assert out is not None
    assert out.status.ingress[0].conditions[0].last_transition_time == "2020-01-01T00:00:00Z"


def test_new_entry_is_appended_and_removed() -> None:
    route = _route(_entry("a", "True", when="t"))
    out = merged(route, _entry("router", "True"), "now")
    assert out is not None and [e.router_name for e in out.status.ingress] == ["a", "router"]
    gone = without_entry(out, "router")
    assert gone is not None and [e.router_name for e in gone.status.ingress] == ["a"]
    assert without_entry(gone, "router") is None
