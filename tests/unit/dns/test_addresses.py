"""Dashed address labels (CoreDNS's forms, both ways) and the reverse zones of a network."""

from __future__ import annotations

import ipaddress

import pytest

from shiftnet.dns.addresses import address_from_label, dashed_label, reverse_zones

LABELS = [
    # (address, the label CoreDNS hands out)
    ("10.3.0.20", "10-3-0-20"),
    ("5678:abcd::2", "5678-abcd--2"),
    ("2001:db8::1", "2001-db8--1"),
    ("fd00::", "fd00--0"),
    ("fd00:0:0:1::", "fd00-0-0-1--0"),
    ("2001:db8:1:2:3:4:5:6", "2001-db8-1-2-3-4-5-6"),
]


@pytest.mark.parametrize(("ip", "label"), LABELS)
def test_labels_are_handed_out_and_read_back(ip: str, label: str) -> None:
    addr = ipaddress.ip_address(ip)
    assert dashed_label(addr) == label
    assert address_from_label(label) == addr


@pytest.mark.parametrize(
    ("label", "ip"),
    [("fd00-0-0-0-0-0-0-9", "fd00::9"), ("0-0-0-0", "0.0.0.0"), ("1-2-3-4", "1.2.3.4")],
)
def test_other_spellings_that_parse_are_accepted(label: str, ip: str) -> None:
    assert address_from_label(label) == ipaddress.ip_address(ip)


@pytest.mark.parametrize(
    "label",
    ["", "1-2-3", "1-2-3-444", "01-2-3-4", "a-b-c-d", "fe80--1%eth0", "1.2.3.4", "x" * 64, "g--1"],
)
def test_labels_that_name_no_address(label: str) -> None:
    assert address_from_label(label) is None


@pytest.mark.parametrize(
    ("cidr", "zones"),
    [
        ("10.3.0.0/16", ["3.10.in-addr.arpa."]),
        ("10.96.0.0/14", [f"{n}.10.in-addr.arpa." for n in (96, 97, 98, 99)]),
        ("127.30.0.0/24", ["0.30.127.in-addr.arpa."]),
        ("10.0.0.0/8", ["10.in-addr.arpa."]),
        ("fd00:10::/32", ["0.1.0.0.0.0.d.f.ip6.arpa."]),
        ("fd00::/30", [f"{n}.0.0.0.0.0.d.f.ip6.arpa." for n in range(4)]),
    ],
)
def test_reverse_zones_split_to_label_boundaries(cidr: str, zones: list[str]) -> None:
    assert reverse_zones(cidr) == zones


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "not-a-net", "::/0", "10.0.0.0/33"])
def test_networks_without_a_sensible_reverse_zone_are_refused(cidr: str) -> None:
    with pytest.raises(ValueError):
        reverse_zones(cidr)
