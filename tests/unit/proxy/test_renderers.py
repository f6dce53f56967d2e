"""nftables and iptables renderers: deterministic, escaped, incremental updates minimal."""

from __future__ import annotations

import pytest
from tests.support.proxy_cluster import endpoints, service

from shiftnet.errors import InvalidInput
from shiftnet.proxy import iptables, nftables
from shiftnet.proxy.model import build_service_table, diff_tables


def table(n: int = 3, affinity: int | None = None, eps: int = 3):  # type: ignore[no-untyped-def]
    svcs = [service(f"s{i}", f"172.30.0.{i + 1}", 80, affinity_timeout=affinity) for i in range(n)]
    epl = [endpoints(f"s{i}", [(f"10.1.{i}.{j + 1}", 8080) for j in range(eps)]) for i in range(n)]
    return build_service_table(svcs, epl)


def test_nft_full_is_deterministic_and_keyed_by_vip() -> None:
    cfg = nftables.NftConfig()
    a, b = nftables.render_full(table(), cfg), nftables.render_full(table(), cfg)
    assert a == b
    assert a.startswith("add table ip shiftnet-proxy\ndelete table ip shiftnet-proxy\n")
    assert "172.30.0.1 . tcp . 80 : goto spread-3" in a
    assert "172.30.0.1 . 80 . 2 : 10.1.0.3 . 8080" in a
    assert "numgen random mod 3 map @endpoints-tcp" in a


def test_nft_affinity_uses_timeout_sets() -> None:
    text = nftables.render_full(table(1, affinity=7), nftables.NftConfig())
    assert "flags dynamic,timeout; timeout 7s;" in text
    assert "update @aff-" in text and "ip saddr @aff-" in text
    assert "dnat ip to 10.1.0.1:8080" in text


def test_nft_update_touches_only_changed_service() -> None:
    cfg = nftables.NftConfig()
    old = table(50)
    epl = [endpoints(f"s{i}", [(f"10.1.{i}.{j + 1}", 8080) for j in range(3)]) for i in range(50)]
    epl[7] = endpoints("s7", [("10.1.7.1", 8080), ("10.1.7.9", 8080)])
    svcs = [service(f"s{i}", f"172.30.0.{i + 1}", 80) for i in range(50)]
    new = build_service_table(svcs, epl)
    script = nftables.render_update(nftables.update_pairs(diff_tables(old, new), cfg), cfg)
    assert "172.30.0.8 " in script and all(f"172.30.0.{i} " not in script for i in (1, 2, 9, 10))
    lines = script.splitlines()
    # 3 -> 2 endpoints: the VIP moves to the spread-2 chain, stale index 2 and the changed
    # endpoint are replaced; deletes come first, adds last, all in one transaction
    assert lines[0] == "delete element ip shiftnet-proxy service-ips { 172.30.0.8 . tcp . 80 }"
    assert (
        "delete element ip shiftnet-proxy endpoints-tcp "
        "{ 172.30.0.8 . 80 . 1, 172.30.0.8 . 80 . 2 }" in lines
    )
    assert "add chain ip shiftnet-proxy spread-2" in lines
    assert (
        lines[-1]
        == "add element ip shiftnet-proxy service-ips { 172.30.0.8 . tcp . 80 : goto spread-2 }"
    )


def test_nft_values_are_validated() -> None:
    with pytest.raises(InvalidInput):
        nftables.nft_value("ipv4", "1.2.3.4; flush ruleset")
    with pytest.raises(InvalidInput):
        nftables.nft_value("comment", 'x" ; drop')
    with pytest.raises(InvalidInput):
        nftables.NftConfig(table="bad name")
    assert nftables.nft_value("port", 80) == "80"
    with pytest.raises(InvalidInput):
        nftables.nft_value("port", 0)


def test_iptables_layout_like_kube_proxy() -> None:
    text, owned = iptables.render_restore(table(1), iptables.IptConfig(cluster_cidr="10.1.0.0/16"))
    assert (
        text == iptables.render_restore(table(1), iptables.IptConfig(cluster_cidr="10.1.0.0/16"))[0]
    )
    assert "-A KUBE-SERVICES" in text and "-j KUBE-MARK-MASQ" in text
    assert "--mode random --probability 0.33333333333" in text
    assert "--mode random --probability 0.50000000000" in text
    assert "-j DNAT --to-destination 10.1.0.1:8080" in text
    assert len(owned) == 2  # KUBE-SVC (no KUBE-SEP without affinity) + the /24's dispatch
    prefixes = ("KUBE-SVC-", "KUBE-SEP-", "KUBE-DST-")
    assert all(c.startswith(prefixes) and len(c) <= 28 for c in owned)


def test_iptables_affinity_recent_and_stale_chains_deleted() -> None:
    text, _ = iptables.render_restore(
        table(1, affinity=60), iptables.IptConfig(), stale_chains=["KUBE-SVC-AAAAAAAAAAAAAAAA"]
    )
    assert "--rcheck --seconds 60 --reap" in text and "--set" in text
    assert "-X KUBE-SVC-AAAAAAAAAAAAAAAA" in text
    with pytest.raises(InvalidInput):
        iptables.render_restore(table(1), iptables.IptConfig(), stale_chains=["INPUT"])


def test_no_endpoints_rejected_in_both() -> None:
    t = table(1, eps=0)
    assert "goto reject-service" in nftables.render_full(t, nftables.NftConfig())
    assert "-j REJECT" in iptables.render_restore(t, iptables.IptConfig())[0]
