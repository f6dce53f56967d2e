"""The record of a controller's own writes that keeps a sync from planning on a lagging cache."""

from __future__ import annotations

import pytest

from shiftnet.master.own_writes import OwnWrites

KEY = ("default", "web")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("written", "cached", "stale"),
    [
        ("7", {}, True),  # created, not in the cache yet
        ("7", {"web-a": "6"}, True),  # updated, cache holds the copy before
        ("7", {"web-a": "7"}, False),  # cache shows our write
        ("7", {"web-a": "9"}, False),  # ... or something newer
        ("10", {"web-a": "9"}, True),  # numeric, not string, order
        ("abc", {"web-a": "abc"}, False),  # opaque versions: equal is caught up
        ("abc", {"web-a": "abd"}, True),
        (None, {"web-a": "9"}, True),  # deleted, cache still has it
        (None, {}, False),  # deleted and gone from the cache
    ],
)
def test_stale_until_the_cache_shows_the_write(written, cached, stale) -> None:
    t = OwnWrites(Clock())
    if written is None:
        t.deleted(KEY, "web-a")
    else:
        t.wrote(KEY, "web-a", written)
    assert t.stale(KEY, cached) is stale


def test_a_met_expectation_is_dropped_and_other_services_are_independent() -> None:
    t = OwnWrites(Clock())
    t.wrote(KEY, "web-a", "5")
    t.wrote(("default", "api"), "api-b", "6")
    assert not t.stale(KEY, {"web-a": "5"})
    assert not t.stale(KEY, {})  # met once: a later delete by someone else is not ours to wait for
    assert t.stale(("default", "api"), {})


def test_an_expectation_never_met_expires() -> None:
    clock = Clock()
    t = OwnWrites(clock, ttl=30.0)
    t.wrote(KEY, "web-a", "5")
    clock.now += 29.0
    assert t.stale(KEY, {})
    clock.now += 2.0
    assert not t.stale(KEY, {})


def test_own_writes_does_no_io() -> None:
    from pathlib import Path

    from tests.support.import_rules import check
    from tests.unit.test_import_rules import IO_MODULES

    src = Path(__file__).resolve().parents[3] / "src"
    assert check(src, "shiftnet", ["shiftnet.master.own_writes"], [*IO_MODULES, "time"]) == []
