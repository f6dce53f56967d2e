"""iptables mode restore inputs (pure): a partial sync writes only what a change touched,
and a full sync followed by partial syncs leaves the same chains as one full sync.

``Kernel`` below plays ``iptables-restore --noflush`` on a dict of chains (declare
flushes or creates, ``-A`` appends, ``-X`` deletes a chain nothing references), so
the tests can compare what the kernel would hold without a kernel.
"""

from __future__ import annotations

import pytest
from tests.support.proxy_cluster import endpoints, service

from shiftnet.api import Endpoints, Service
from shiftnet.errors import InvalidInput
from shiftnet.proxy import iptables
from shiftnet.proxy.changes import ProxyChanges
from shiftnet.proxy.iptables_rules import NAT, Chain, Rule, Verdict
from shiftnet.proxy.iptables_writer import render_restore_text
from shiftnet.proxy.model import ServiceTable, TableDiff, build_service_table, diff_tables

CFG = iptables.IptConfig(cluster_cidr="10.1.0.0/16")


class Kernel:
    """What ``iptables-restore --noflush`` would leave, table by table."""

    def __init__(self) -> None:
        self.chains: dict[tuple[str, str], list[str]] = {}

    def restore(self, text: str) -> None:
        table = ""
        for line in text.splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":"):
                self.chains[(table, line[1:].split()[0])] = []
            elif line.startswith("-A "):
                name, rule = line[3:].split(" ", 1)
                assert (table, name) in self.chains, f"append to undeclared chain {name}"
                self.chains[(table, name)].append(rule)
            elif line.startswith("-X "):
                name = line[3:]
                assert not self.chains[(table, name)], f"-X of non-empty chain {name}"
                users = [
                    c
                    for c, rules in self.chains.items()
                    if c[0] == table and any(f"-j {name}" in r for r in rules)
                ]
                assert not users, f"-X {name} still referenced from {users}"
                del self.chains[(table, name)]
            else:
                assert line == "COMMIT", line
        for (tbl, _), rules in self.chains.items():  # every jump lands on a chain that exists
            for rule in rules:
                target = rule.rsplit("-j ", 1)[1].split()[0]
                if target.startswith("KUBE-"):
                    assert (tbl, target) in self.chains, f"dangling jump {rule}"


def objects(n: int) -> tuple[dict[tuple[str, str], Service], dict[tuple[str, str], Endpoints]]:
    svcs = {
        ("default", f"s{i}"): service(f"s{i}", f"172.30.{i // 20}.{i % 20 + 1}", 80)
        for i in range(n)
    }
    eps = {
        ("default", f"s{i}"): endpoints(f"s{i}", [(f"10.1.{i}.{j + 1}", 8080) for j in range(3)])
        for i in range(n)
    }
    return svcs, eps


class Cluster:
    """Services and Endpoints, the change tracker, the plan and a fake kernel."""

    def __init__(self, n: int) -> None:
        self.svcs, self.eps = objects(n)
        self.changes = ProxyChanges()
        self.plan = iptables.IptPlan(CFG)
        self.kernel = Kernel()
        for key in self.svcs:
            self.changes.mark(*key)
        table, _ = self.take()
        self.kernel.restore(self.plan.full(table))

    def take(self) -> tuple[ServiceTable, TableDiff]:
        return self.changes.take(
            lambda ns, n: self.svcs.get((ns, n)), lambda ns, n: self.eps.get((ns, n))
        )

    def change(self, name: str) -> str:
        self.changes.mark("default", name)
        _, diff = self.take()
        text = self.plan.partial(diff)
        self.kernel.restore(text)
        return text

    def full_equivalent(self) -> dict[tuple[str, str], list[str]]:
        fresh = Kernel()
        fresh.restore(iptables.IptPlan(CFG).full(self.changes.table))
        return fresh.chains


def chain_names(text: str) -> set[str]:
    return {line[1:].split()[0] for line in text.splitlines() if line.startswith(":")}


def test_endpoint_change_writes_only_that_services_chain() -> None:
    c = Cluster(60)
    svc = iptables.svc_chain(c.changes.table.for_service("default", "s7")[0])
    c.eps[("default", "s7")] = endpoints("s7", [("10.1.7.1", 8080), ("10.1.7.9", 8080)])
    text = c.change("s7")
    assert text.startswith("*nat\n") and "*filter" not in text
    assert chain_names(text) == {svc} and "\n-X " not in text  # no chain per endpoint
    assert "KUBE-SERVICES" not in text and "KUBE-DST-" not in text
    assert "10.1.7.9:8080" in text and "10.1.8." not in text  # nothing of other services
    assert len(text.splitlines()) <= 8
    assert c.kernel.chains == c.full_equivalent()


def test_affinity_endpoint_change_replaces_endpoint_chains() -> None:
    c = Cluster(10)
    c.svcs[("default", "s3")] = service("s3", "172.30.0.4", 80, affinity_timeout=60)
    c.change("s3")
    entry = c.changes.table.for_service("default", "s3")[0]
    old = {iptables.sep_chain(entry, b) for b in entry.backends}
    c.eps[("default", "s3")] = endpoints("s3", [("10.1.3.1", 8080), ("10.1.3.9", 8080)])
    text = c.change("s3")
    entry = c.changes.table.for_service("default", "s3")[0]
    new_sep = iptables.sep_chain(entry, entry.backends[1])
    gone = old - {iptables.sep_chain(entry, b) for b in entry.backends}
    assert chain_names(text) == {iptables.svc_chain(entry), new_sep, *gone}
    assert {line[3:] for line in text.splitlines() if line.startswith("-X ")} == gone
    assert "--rcheck --seconds 60 --reap" in text and "--set" in text
    assert c.kernel.chains == c.full_equivalent()


def test_unchanged_service_writes_nothing() -> None:
    c = Cluster(5)
    assert c.change("s3") == ""


def test_new_service_rewrites_only_its_dispatch_chain() -> None:
    c = Cluster(30)  # 172.30.0.x and 172.30.1.x
    c.svcs[("default", "new")] = service("new", "172.30.1.200", 80)
    c.eps[("default", "new")] = endpoints("new", [("10.9.0.1", 8080)])
    text = c.change("new")
    dst = [n for n in chain_names(text) if n.startswith("KUBE-DST-")]
    assert len(dst) == 1 and "KUBE-SERVICES" not in chain_names(text)
    # the /24's chain lists every service there: 10 of the old ones and the new one
    assert text.count("-j KUBE-SVC-") == 11 and text.count("-j DNAT") == 1
    assert c.kernel.chains == c.full_equivalent()


def test_service_in_a_new_slash24_adds_a_dispatch_jump() -> None:
    c = Cluster(10)
    c.svcs[("default", "far")] = service("far", "172.30.9.1", 80)
    c.eps[("default", "far")] = endpoints("far", [("10.9.0.1", 8080)])
    text = c.change("far")
    assert "-A KUBE-SERVICES -d 172.30.9.0/24 -j KUBE-DST-" in text
    assert "*filter" not in text  # no rejects anywhere: the filter side is untouched
    del c.svcs[("default", "far")]
    text = c.change("far")
    assert "172.30.9.0/24" not in text and "-X KUBE-DST-" in text and "-X KUBE-SVC-" in text
    assert c.kernel.chains == c.full_equivalent()


def test_losing_all_endpoints_moves_the_service_to_reject() -> None:
    c = Cluster(10)
    c.eps[("default", "s2")] = endpoints("s2", [])
    text = c.change("s2")
    assert "*filter" in text and "-j REJECT --reject-with icmp-port-unreachable" in text
    assert '"default/s2:main/TCP has no endpoints"' in text
    assert "-X KUBE-SVC-" in text
    assert c.kernel.chains == c.full_equivalent()
    c.eps[("default", "s2")] = endpoints("s2", [("10.1.2.1", 8080)])
    c.change("s2")
    assert c.kernel.chains == c.full_equivalent()


def test_many_partial_syncs_equal_one_full_sync() -> None:
    """Every kind of change, one after another, each applied as a partial restore."""
    c = Cluster(45)
    steps = [
        ("s1", lambda: c.eps.__setitem__(("default", "s1"), endpoints("s1", []))),
        ("s1", lambda: c.eps.__setitem__(("default", "s1"), endpoints("s1", [("10.5.0.1", 80)]))),
        ("s2", lambda: c.svcs.__delitem__(("default", "s2"))),
        ("s3", lambda: c.svcs.__setitem__(("default", "s3"), service("s3", "172.30.7.7", 80))),
        (
            "s4",
            lambda: c.svcs.__setitem__(
                ("default", "s4"), service("s4", "172.30.0.5", 80, affinity_timeout=30)
            ),
        ),
        ("s5", lambda: c.svcs.__setitem__(("default", "s5"), service("s5", "172.30.0.6", 81))),
        ("s40", lambda: c.svcs.__delitem__(("default", "s40"))),
        ("s41", lambda: c.svcs.__delitem__(("default", "s41"))),
        ("s42", lambda: c.svcs.__delitem__(("default", "s42"))),
        ("s43", lambda: c.svcs.__delitem__(("default", "s43"))),
        ("s44", lambda: c.svcs.__delitem__(("default", "s44"))),  # its /24 is empty now
        ("s2", lambda: c.svcs.__setitem__(("default", "s2"), service("s2", "172.30.0.3", 80))),
    ]
    for name, step in steps:
        step()
        c.change(name)
        assert c.kernel.chains == c.full_equivalent(), name


def test_full_sync_deletes_stale_chains_of_the_right_table() -> None:
    c = Cluster(3)
    stale = [(NAT, "KUBE-SEP-AAAAAAAAAAAAAAAA"), ("filter", "KUBE-DST-BBBBBBBBBBBBBBBB")]
    text = iptables.IptPlan(CFG).full(c.changes.table, stale)
    nat, filt = text.split("*nat\n")[1], text.split("*nat\n")[0]
    assert "-X KUBE-SEP-AAAAAAAAAAAAAAAA" in nat and "-X KUBE-DST-BBBBBBBBBBBBBBBB" in filt
    with pytest.raises(InvalidInput):
        iptables.IptPlan(CFG).full(c.changes.table, [(NAT, "INPUT")])


def test_writer_refuses_what_ipt_value_refuses() -> None:
    bad = Rule(Verdict("REJECT"), comment='x" -j ACCEPT')
    with pytest.raises(InvalidInput):
        render_restore_text([Chain(NAT, "KUBE-SERVICES", (bad,))])
    with pytest.raises(InvalidInput):
        render_restore_text([Chain(NAT, "INPUT", ())])
    with pytest.raises(InvalidInput):
        render_restore_text([Chain(NAT, "KUBE-SERVICES", (Rule(Verdict("ACCEPT")),))])
    with pytest.raises(InvalidInput):
        render_restore_text([Chain("raw", "KUBE-SERVICES", ())])


def test_plan_matches_table_built_at_once() -> None:
    svcs, eps = objects(25)
    table = build_service_table(svcs.values(), eps.values())
    assert diff_tables(table, table).empty
    assert iptables.IptPlan(CFG).full(table) == iptables.IptPlan(CFG).full(table)


def test_full_sync_in_parts_is_consistent_after_each_part() -> None:
    """Parts of at most 4 service ports: after each part (on top of an older ruleset)
    every jump lands on a chain, and the end state is the one-part full sync's."""
    c = Cluster(20)
    for i in range(0, 20, 3):  # the kernel holds an older state: endpoints differ
        c.eps[("default", f"s{i}")] = endpoints(f"s{i}", [(f"10.7.{i}.1", 8080)])
        c.changes.mark("default", f"s{i}")
    del c.svcs[("default", "s19")]
    c.changes.mark("default", "s19")
    table, _ = c.take()
    existing = [key for key in c.kernel.chains if iptables.HASHED_CHAIN_RE.match(key[1])]
    parts = iptables.IptPlan(CFG).full_parts(table, existing, services_per_part=4)
    assert len(parts) == 5 + 1  # 19 service ports in parts of 4, then the rest
    assert all(":KUBE-SERVICES" not in p and "\n-X " not in p for p in parts[:-1])
    assert "\n-X KUBE-SVC-" in parts[-1]  # s19's chains go only at the end
    for part in parts:
        c.kernel.restore(part)  # asserts no dangling jump after each
    assert c.kernel.chains == c.full_equivalent()


def test_full_sync_in_parts_into_an_empty_kernel() -> None:
    c = Cluster(7)
    kernel = Kernel()
    parts = iptables.IptPlan(CFG).full_parts(c.changes.table, (), services_per_part=3)
    assert len(parts) == 4
    for part in parts:
        kernel.restore(part)
    assert kernel.chains == c.full_equivalent()


def test_iptables_rule_modules_do_no_io() -> None:
    """The layout, plan, rules and writer are pure (``socket`` is allowed: the model's
    ``canonical_ipv4`` uses ``inet_pton``, a pure function); only kernel.py and
    iptables_tools.py run commands."""
    from pathlib import Path

    from tests.support.import_rules import check
    from tests.unit.test_import_rules import IO_MODULES

    pure = [
        f"shiftnet.proxy.{m}"
        for m in (
            "iptables",
            "iptables_rules",
            "iptables_writer",
            "iptables_layout",
            "iptables_plan",
        )
    ]
    io = [m for m in IO_MODULES if m != "socket"] + ["shiftnet.proxy.iptables_tools"]
    src = Path(__file__).resolve().parents[3] / "src"
    assert check(src, "shiftnet", pure, io) == []


def test_cleanup_in_parts_removes_every_chain() -> None:
    c = Cluster(6)
    existing = [key for key in c.kernel.chains if iptables.HASHED_CHAIN_RE.match(key[1])]
    parts = iptables.render_cleanup(existing, chains_per_part=7)
    assert len(parts) > 2 and all("\n-A " not in p for p in parts)
    for part in parts:
        c.kernel.restore(part)
    assert c.kernel.chains == {}
    assert len(iptables.render_cleanup(existing)) == 1


def nat_rules(text: str, prefix: str) -> list[str]:
    nat = text.split("*nat\n", 1)[1].split("COMMIT", 1)[0]
    return [line for line in nat.splitlines() if line.startswith(f"-A {prefix}")]


def test_hairpin_is_one_postrouting_rule_not_one_per_endpoint() -> None:
    """Every endpoint's ``-s EP -j KUBE-MARK-MASQ`` is a rule a legacy restore copies out
    of the kernel and back on each change; one rule in KUBE-POSTROUTING does it for all."""
    svcs, eps = objects(3)
    svcs[("default", "s9")] = service("s9", "172.30.5.9", 80, affinity_timeout=60)
    eps[("default", "s9")] = endpoints("s9", [("10.1.9.1", 8080), ("10.1.9.2", 8080)])
    table = build_service_table(svcs.values(), eps.values())
    text = iptables.IptPlan(CFG).full(table)
    post = nat_rules(text, "KUBE-POSTROUTING")
    assert "-m conntrack --ctstate DNAT -m bpf --bytecode" in post[0]
    assert post[0].endswith("-j KUBE-MARK-MASQ") and len(post) == 4
    assert not [r for r in nat_rules(text, "KUBE-S") if " -s 10.1." in r]  # SVC and SEP
    per_endpoint = iptables.IptPlan(
        iptables.IptConfig(cluster_cidr="10.1.0.0/16", hairpin_rule=False)
    )
    text = per_endpoint.full(table)
    assert len(nat_rules(text, "KUBE-POSTROUTING")) == 3 and "-m bpf" not in text
    marks = [r for r in nat_rules(text, "KUBE-S") if r.endswith("-j KUBE-MARK-MASQ")]
    assert len([r for r in marks if r.startswith("-A KUBE-SVC-")]) == 9  # 3 services x 3
    assert len([r for r in marks if r.startswith("-A KUBE-SEP-")]) == 2  # affinity: s9's


def test_nat_rules_carry_no_comment_and_no_empty_protocol_match() -> None:
    """Bytes per rule are what a legacy restore costs: no comment match (288 bytes) in
    nat, and ``-m tcp`` (48 bytes) only where a port is matched."""
    svcs, eps = objects(2)
    svcs[("default", "empty")] = service("empty", "172.30.0.99", 80)
    table = build_service_table(svcs.values(), eps.values())
    text = iptables.IptPlan(CFG).full(table)
    nat = text.split("*nat\n", 1)[1]
    assert "-m comment" not in nat
    dnat = [line for line in nat.splitlines() if "-j DNAT" in line]
    assert len(dnat) == 6 and all("-p tcp" in r and "-m tcp" not in r for r in dnat)
    dispatch = [line for line in nat.splitlines() if "-j KUBE-SVC-" in line]
    assert all("-p tcp -m tcp --dport 80" in r for r in dispatch) and len(dispatch) == 2
    filt = text.split("*filter\n", 1)[1].split("COMMIT", 1)[0]
    assert '-m comment --comment "default/empty:main/TCP has no endpoints"' in filt
