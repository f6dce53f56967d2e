"""Check 4 evaluates each router's recorded shard (ROUTE_LABELS, NAMESPACE_LABELS) against the
route's and its namespace's labels: which router should serve it, and which did."""

from __future__ import annotations

from pathlib import Path

from tests.unit.diagnose.test_route_checks import first, healthy, router

from shiftnet.api.selectors import parse_selector
from shiftnet.diagnose.route_checks import diagnose_route
from shiftnet.diagnose.route_facts import Admission
from shiftnet.router.config import RouterConfig
from shiftnet.router.shard_record import parse_shard, record_shard

A = router(name="shard-a", shard=(parse_selector("shard=a"), parse_selector("")))
B = router(name="shard-b", shard=(parse_selector("shard in (b)"), parse_selector("team")))
HOST = "app.example.com"


def test_the_record_round_trips_the_selectors(tmp_path: Path) -> None:
    config = RouterConfig(
        route_labels=parse_selector("shard in (a,b),!legacy"),
        namespace_labels=parse_selector("team=x"),
    )
    record_shard(tmp_path, config)
    text = (tmp_path / "run" / "shard.json").read_text()
    assert parse_shard(text) == (config.route_labels, config.namespace_labels)
    assert parse_shard("{") is None and parse_shard('{"routeLabels": "a=("}') is None


def test_no_shard_selects_the_route_names_the_labels_to_add() -> None:
    facts = healthy(admissions=(), routers=(A, B), route_labels={"shard": "c"})
    number, found, fix = first(facts)
    assert number == 4
    assert found.startswith("no router's shard selects route ns/web (route labels: shard=c;")
    assert (
        "router `shard-b` serves ROUTE_LABELS `shard in (b)` and NAMESPACE_LABELS `team`" in found
    )
    assert "route label shard=a (router `shard-a`)" in fix
    assert "route label shard=b, namespace `ns` label team (router `shard-b`)" in fix


def test_the_router_that_should_serve_it_and_did_not_is_named() -> None:
    refused = Admission("shard-b", False, "HostAlreadyClaimed", "claimed by other/web")
    facts = healthy(
        admissions=(refused,),
        routers=(A, B),
        route_labels={"shard": "b"},
        namespace_labels={"team": "x"},
    )
    number, found, _ = first(facts)
    assert number == 4 and found.startswith(
        "route not admitted by router `shard-b`: HostAlreadyClaimed"
    )
    silent = healthy(admissions=(), routers=(A, B), route_labels={"shard": "a"})
    number, found, _ = first(silent)
    assert number == 4
    assert found == (
        "router `shard-a`'s shard (ROUTE_LABELS `shard=a`) selects route ns/web but the "
        "router has not reported on it"
    )


def test_an_admission_outside_the_shard_fails_and_the_right_one_is_named() -> None:
    wrong = healthy(
        admissions=(Admission("shard-b", True, host=HOST),),
        routers=(A, B),
        route_labels={"shard": "a"},
    )
    number, found, _ = first(wrong)
    assert number == 4 and found.startswith(
        "router `shard-b` admitted route ns/web but its shard (ROUTE_LABELS `shard in (b)` "
        "and NAMESPACE_LABELS `team`) does not select it"
    )
    right = healthy(
        admissions=(Admission("shard-a", True, host=HOST),),
        routers=(A, B),
        route_labels={"shard": "a"},
    )
    report = diagnose_route(right)
    assert report.ok, report.lines()
    assert report.checks[3].found == (
        f"admitted by router `shard-a` on host {HOST}; the shard of `shard-a` "
        "(ROUTE_LABELS `shard=a`) selects it; not in the shard of `shard-b`"
    )
