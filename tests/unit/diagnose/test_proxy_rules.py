"""Reading one Service port's rules out of a recorded proxy's nftables table or
iptables-save text: the live map after a flip, a spread chain short of endpoint
elements, a dispatch rule in a chain KUBE-SERVICES does not reach, and a garbled record."""

from __future__ import annotations

import dataclasses
import json

from shiftnet.diagnose.proxy_record import ProxyRecord, parse_record
from shiftnet.diagnose.proxy_rules import iptables_port_rules, nft_port_rules, parse_nft_table
from shiftnet.proxy.mode_record import mode_record

NFT = parse_record(json.dumps(mode_record("nftables", "ns1", "shiftnet-proxy", None)))
IPT = parse_record(json.dumps(mode_record("iptables", None, "shiftnet-proxy", "nft")))


def listing(elements: list[object], endpoints: int, suffix: str = "-b") -> str:
    items: list[dict[str, object]] = [
        {"table": {"family": "ip", "name": "shiftnet-proxy"}},
        {"map": {"name": "service-ips" + suffix, "elem": elements}},
        {
            "map": {
                "name": "endpoints-tcp" + suffix,
                "elem": [
                    [{"concat": ["172.30.0.10", 80, i]}, {"concat": ["10.0.0.1", 8080]}]
                    for i in range(endpoints)
                ],
            }
        },
        {"map": {"name": "no-endpoint-services" + suffix, "elem": []}},
        {"chain": {"name": "services"}},
        {"chain": {"name": "spread-2"}},
        {"rule": {"chain": "spread-2", "expr": [{"dnat": {"addr": {"map": {"data": "@x"}}}}]}},
        {"rule": {"chain": "services", "expr": [{"vmap": {"data": "@service-ips" + suffix}}]}},
    ]
    return json.dumps({"nftables": items})


ELEMENT = [{"concat": ["172.30.0.10", "tcp", 80]}, {"goto": {"target": "spread-2"}}]


def test_nft_element_in_the_live_map_after_a_flip() -> None:
    assert isinstance(NFT, ProxyRecord)
    table = parse_nft_table(listing([ELEMENT], endpoints=2))
    assert table is not None
    found = nft_port_rules(table, NFT, "172.30.0.10", "tcp", 80)
    assert found.ok, found
    assert "goto spread-2 (2 endpoint elements in endpoints-tcp-b)" in found.text
    missing = nft_port_rules(table, NFT, "172.30.0.10", "tcp", 81)
    assert not missing.ok
    assert missing.text == (
        "no element 172.30.0.10 . tcp . 81 in map service-ips-b (nor in no-endpoint-services-b)"
    )


def test_nft_spread_chain_short_of_endpoint_elements() -> None:
    assert isinstance(NFT, ProxyRecord)
    table = parse_nft_table(listing([ELEMENT], endpoints=1, suffix=""))
    assert table is not None
    found = nft_port_rules(table, NFT, "172.30.0.10", "tcp", 80)
    assert not found.ok
    assert "picks among 2 endpoints but map endpoints-tcp holds 1" in found.text


SAVE = """*nat
:KUBE-SERVICES - [0:0]
:KUBE-DST-AAAA - [0:0]
:KUBE-SVC-{h} - [0:0]
-A KUBE-SERVICES -d 172.30.0.0/24 -j KUBE-DST-AAAA
-A KUBE-DST-AAAA -d 172.30.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-{h}
-A KUBE-SVC-{h} -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:8080
COMMIT
"""


def test_iptables_dispatch_to_the_service_chain() -> None:
    assert isinstance(IPT, ProxyRecord)
    own = ("KUBE-SVC-HHHH", "KUBE-SVL-HHHH")
    text = SAVE.format(h="HHHH")
    found = iptables_port_rules(text, "", IPT, "172.30.0.10", "tcp", 80, own)
    assert found.ok and "KUBE-DST-AAAA -> KUBE-SVC-HHHH (1 rules)" in found.text
    other = iptables_port_rules(text, "", IPT, "172.30.0.10", "tcp", 80, ("KUBE-SVC-OTHER",))
    assert not other.ok and "no nat rule sends 172.30.0.10/32 tcp dport 80" in other.text
    unreached = text.replace("-A KUBE-SERVICES -d 172.30.0.0/24 -j KUBE-DST-AAAA\n", "")
    cut = iptables_port_rules(unreached, "", IPT, "172.30.0.10", "tcp", 80, own)
    assert not cut.ok and "KUBE-SERVICES does not jump to KUBE-DST-AAAA" in cut.text
    rejected = "*filter\n-A KUBE-DST-B -d 172.30.0.10/32 -p tcp -m tcp --dport 80 -j REJECT\n"
    empty = iptables_port_rules("*nat\n", rejected, IPT, "172.30.0.10", "tcp", 80, own)
    assert empty.ok and "rejects" in empty.text


def test_garbled_records_say_what_is_wrong() -> None:
    assert parse_record("{") == "it is not JSON"
    good = mode_record("nftables", None, "shiftnet-proxy", None)
    assert "mode 'ebpf'" in str(parse_record(json.dumps({**good, "mode": "ebpf"})))
    assert "pid" in str(parse_record(json.dumps({**good, "pid": "1"})))
    broken = {**good, "nftables": {**good["nftables"], "table": ""}}
    assert parse_record(json.dumps(broken)) == "its nftables part: table is missing"
    assert isinstance(NFT, ProxyRecord) and dataclasses.asdict(NFT)["netns"] == "ns1"
