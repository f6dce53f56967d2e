"""The checks of ``diagnose`` are pure: they reach no I/O module, so a verdict depends only
on the facts the gatherers hand them."""

from __future__ import annotations

from pathlib import Path

from tests.support.import_rules import check
from tests.unit.test_import_rules import IO_MODULES

SRC = Path(__file__).resolve().parents[3] / "src"

DIAGNOSE_PURE = [
    "shiftnet.diagnose.result",
    "shiftnet.diagnose.route_facts",
    "shiftnet.diagnose.route_lookup",
    "shiftnet.diagnose.route_checks",
    "shiftnet.diagnose.service_checks",
    "shiftnet.diagnose.listeners",
    "shiftnet.diagnose.probe_events",
    "shiftnet.diagnose.access_entry",
    "shiftnet.diagnose.proxy_record",
    "shiftnet.diagnose.proxy_rules",
]


def test_pure_diagnose_modules_do_no_io() -> None:
    io = [*IO_MODULES, "shiftnet.diagnose.probes", "shiftnet.diagnose.router_view", "http"]
    assert check(SRC, "shiftnet", DIAGNOSE_PURE, io) == []
