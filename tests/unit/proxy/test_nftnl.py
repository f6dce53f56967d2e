"""Raw netlink encoding of map elements and the prepare/swap renderers of the map flip."""

from __future__ import annotations

import struct

import pytest
from tests.unit.proxy.test_renderers import table

from shiftnet.errors import InvalidInput
from shiftnet.proxy import nftables, nftnl


def test_endpoint_element_bytes_match_nft() -> None:
    # nft --debug=netlink prints this element's registers as
    # "element 02001eac 00005000 00000001 : 0c00640a 0000901f"
    (run,) = nftnl.encode_endpoints(["172.30.0.2 . 80 . 1 : 10.100.0.12 . 8080"])
    size, kind = struct.unpack_from("=HH", run)
    assert (size, kind & 0x3FFF) == (40, 1) and len(run) == 40
    assert run[12:24] == bytes.fromhex("ac1e0002 00500000 01000000")
    assert run[32:40] == bytes.fromhex("0a64000c 1f900000")
    assert run == nftnl.encode_endpoint("172.30.0.2 . 80 . 1 : 10.100.0.12 . 8080")


def test_bulk_encoders_equal_the_per_element_reference() -> None:
    described = nftables.describe_all(table(250, eps=10), nftables.NftConfig())
    elements = nftables.map_elements(described)
    endpoints = elements["endpoints-tcp"]
    runs = nftnl.encode_endpoints(endpoints)
    assert b"".join(runs) == b"".join(map(nftnl.encode_endpoint, endpoints))
    assert [len(r) for r in runs] == [60000, 40000]  # 2,500 elements x 40 bytes
    verdicts = elements["service-ips"]
    assert b"".join(nftnl.encode_verdicts(verdicts)) == b"".join(
        map(nftnl.encode_verdict, verdicts)
    )


@pytest.mark.parametrize(
    "bad",
    [
        "1.2.3 . 80 . 0 : 1.2.3.4 . 80",
        "1.2.3.4 . 80 . 0 : 1.2.3.4 . 70000",
        "1.2.3.256 . 80 . 0 : 1.2.3.4 . 80",
        "01.2.3.4 . 80 . 0 : 1.2.3.4 . 80",
        "1.2.3.4 . 080 . 0 : 1.2.3.4 . 80",
        "1.2.3.4 . 80 : 0 . 1.2.3.4 . 80",
        "1.2.3.4 . 80 . 0 : 1.2.3.4 . 80 . 5",
        "1.2.3.4 . 80 . 0 : 1.2.3.4 . 80 ",
    ],
)
def test_malformed_endpoint_elements_are_refused(bad: str) -> None:
    good = ["172.30.0.2 . 80 . 1 : 10.100.0.12 . 8080"] * 3
    with pytest.raises(InvalidInput, match="unexpected shape"):
        nftnl.encode_endpoints([*good, bad])


@pytest.mark.parametrize(
    "bad",
    [
        "1.2.3.4 . tcp . 80 : goto x y",
        "1.2.3.4 . sctp . 80 : goto c",
        "1.2.3.4 . tcp . 80 : jump c",
        "1.2.3.04 . tcp . 80 : goto c",
        "1.2.3.4 . tcp : goto c",
    ],
)
def test_malformed_verdict_elements_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInput, match="unexpected shape"):
        nftnl.encode_verdicts(["1.2.3.5 . tcp . 80 : goto spread-2", bad])


def test_prepare_and_swap_name_the_standby_maps_and_remove_the_rest() -> None:
    cfg = nftables.NftConfig(maps_suffix="-b")
    described = nftables.describe_all(table(3, eps=2), cfg)
    live = ["service-ips", "no-endpoint-services", "endpoints-tcp", "endpoints-udp"]
    prepare = nftables.render_prepare(described, cfg, [*live, "endpoints-tcp-b"])
    assert "delete map ip shiftnet-proxy endpoints-tcp-b" in prepare  # an earlier attempt's
    assert "add map ip shiftnet-proxy service-ips-b { type " in prepare
    assert "add chain ip shiftnet-proxy spread-2" in prepare
    assert "10.1." not in prepare  # elements never go through the text parser here
    swap = nftables.render_swap(described, cfg, ["services", "svc-OLD"], [*live, "aff-OLD"])
    lines = swap.splitlines()
    assert lines[0] == "flush table ip shiftnet-proxy"
    for m in live:
        assert f"delete map ip shiftnet-proxy {m}" in lines
    assert "delete set ip shiftnet-proxy aff-OLD" in lines
    assert "delete chain ip shiftnet-proxy svc-OLD" in lines
    assert "vmap @service-ips-b" in swap and "map @endpoints-tcp-b" in swap
    assert "10.1." not in swap
    with pytest.raises(InvalidInput):
        nftables.NftConfig(maps_suffix="-c")
