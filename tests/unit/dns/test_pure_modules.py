"""The DNS's pure modules do no I/O: no files, sockets, processes, store or clocks of their own."""

from __future__ import annotations

from pathlib import Path

from tests.support.import_rules import check

SRC = Path(__file__).resolve().parents[3] / "src"

DNS_PURE = [
    "shiftnet.dns.addresses",
    "shiftnet.dns.names",
    "shiftnet.dns.podindex",
    "shiftnet.dns.podrecords",
    "shiftnet.dns.records",
    "shiftnet.dns.resolvconf",
    "shiftnet.dns.tcp_slots",
    "shiftnet.dns.wildcards",
    "shiftnet.dns.zone",
]
IO_MODULES = [
    "os",
    "pathlib",
    "io",
    "time",
    "asyncio",
    "socket",
    "subprocess",
    "shutil",
    "prometheus_client",
    "shiftnet.client",
    "shiftnet.informer",
    "shiftnet.store",
    "shiftnet.dns.server",
    "shiftnet.dns.upstream",
    "shiftnet.dns.chase",
]


def test_pure_dns_modules_reach_no_io_module() -> None:
    assert check(SRC, "shiftnet", DNS_PURE, IO_MODULES) == []
