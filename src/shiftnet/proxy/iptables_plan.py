"""What an iptables sync writes: everything (full) or only what a diff changed (partial). Pure.

A partial sync compares the chains each changed service port had (described
again from its previous entry) with the chains it has now: chains whose
rules differ are written, chains it no longer has are flushed and deleted,
and the dispatch chain of each /24 (or node port range) whose rules changed
is rewritten from the ports that live there now. The top-level
``KUBE-SERVICES`` / ``KUBE-NODEPORTS`` chains are written only when a
dispatch chain appears or goes away. Nothing is read back from the kernel:
the plan keeps which ports live in which dispatch chain, and the kernel is
assumed to hold what the last sync wrote (a failed restore changes nothing,
and the driver then does a full sync).
"""

from __future__ import annotations

from collections.abc import Iterable

from shiftnet.proxy.iptables_layout import (
    Bucket,
    DispatchRules,
    IptConfig,
    bucket_chain,
    describe,
    static_chains,
    top_chains,
)
from shiftnet.proxy.iptables_rules import FILTER, NAT, TABLES, Chain, Rule
from shiftnet.proxy.iptables_writer import HASHED_CHAIN_RE, ipt_value, render_restore_text
from shiftnet.proxy.model import ServiceEntry, ServicePortName, ServiceTable, TableDiff

_TABLE_INDEX = {NAT: 0, FILTER: 1}


class IptPlan:
    """The restore inputs of successive syncs, and what they leave in the kernel."""

    def __init__(self, config: IptConfig) -> None:
        self.config = config
        # dispatch rules of each port, per bucket: (nat rules, filter rules)
        self._dispatch: dict[ServicePortName, DispatchRules] = {}
        self._members: dict[Bucket, set[ServicePortName]] = {}
        self._live: dict[str, set[Bucket]] = {t: set() for t in TABLES}  # non-empty buckets
        self.owned: set[str] = set()  # hashed chains the last full sync wrote (for the record)

    def full(self, table: ServiceTable, existing: Iterable[tuple[str, str]] = ()) -> str:
        """Everything, and ``-X`` for the chains in ``existing`` ((table, name), hashed
        names of ours found in the kernel) that it no longer has."""
        return "".join(self.full_parts(table, existing))

    def full_parts(
        self,
        table: ServiceTable,
        existing: Iterable[tuple[str, str]] = (),
        services_per_part: int | None = None,
    ) -> list[str]:
        """A full sync as restore inputs to apply in order (one unless ``services_per_part``).

        With ``services_per_part`` the per-service chains come in parts of that many
        service ports, each whole (its SVC, SEP, ... chains together; the first part also
        KUBE-MARK-MASQ and KUBE-POSTROUTING), and the last part writes the dispatch and
        top chains and deletes stale ones. Each part is
        one transaction, and after each every service is served by a complete old or
        new set of chains: new chains are not referenced before the last part, and no
        chain is deleted before it.
        """
        self._dispatch.clear()
        self._members.clear()
        groups: list[list[Chain]] = []
        for entry in table.sorted_entries():
            rules = describe(entry, self.config)
            groups.append(list(rules.chains.values()))
            self._add(entry.id, rules.dispatch)
        rest: list[Chain] = []
        self._live = {t: set() for t in TABLES}
        for bucket in sorted(self._members):
            for chain in self._bucket_chains(bucket):
                rest.append(chain)
                self._live[chain.table].add(bucket)
        for table_name in TABLES:
            rest += top_chains(table_name, self._live[table_name])
        static = static_chains(self.config)  # first: endpoint chains jump to KUBE-MARK-MASQ
        rest = [*static, *rest]
        owned = {(c.table, c.name) for c in rest}
        owned.update((c.table, c.name) for group in groups for c in group)
        self.owned = {name for _, name in owned if HASHED_CHAIN_RE.match(name)}
        stale = sorted(
            (ipt_value("table", t), ipt_value("chain", name))
            for t, name in set(existing)
            if (t, name) not in owned
        )
        if services_per_part is None:
            return [render_restore_text([*(c for g in groups for c in g), *rest], stale)]
        size = max(1, services_per_part)
        parts = [
            render_restore_text(
                [*(static if i == 0 else ()), *(c for group in groups[i : i + size] for c in group)]
            )
            for i in range(0, len(groups), size)
        ]
        return [*parts, render_restore_text(rest[len(static) :] if parts else rest, stale)]

    def partial(self, diff: TableDiff) -> str:
        """Only what ``diff`` changed ("" when that is nothing)."""
        pairs: list[tuple[ServiceEntry | None, ServiceEntry | None]] = [
            *((old, None) for old in diff.removed),
            *((None, new) for new in diff.added),
            *diff.changed,
        ]
        writes: dict[tuple[str, str], Chain] = {}
        deletes: set[tuple[str, str]] = set()
        dirty: set[Bucket] = set()
        for old, new in pairs:
            before = describe(old, self.config) if old is not None else None
            after = describe(new, self.config) if new is not None else None
            old_chains = before.chains if before else {}
            new_chains = after.chains if after else {}
            for name, chain in new_chains.items():
                if old_chains.get(name) != chain:
                    writes[chain.key] = chain
            deletes.update((NAT, name) for name in old_chains.keys() - new_chains.keys())
            old_dispatch = before.dispatch if before else {}
            new_dispatch = after.dispatch if after else {}
            for bucket in old_dispatch.keys() | new_dispatch.keys():
                if old_dispatch.get(bucket) != new_dispatch.get(bucket):
                    dirty.add(bucket)
            key = (old or new).id  # type: ignore[union-attr]
            self._remove(key)
            if after is not None:
                self._add(key, after.dispatch)
        tops_dirty: set[str] = set()
        for bucket in sorted(dirty):
            chains = {c.table: c for c in self._bucket_chains(bucket)}
            for table_name in TABLES:
                live = self._live[table_name]
                written = chains.get(table_name)
                if written is not None:
                    writes[written.key] = written
                    if bucket not in live:
                        live.add(bucket)
                        tops_dirty.add(table_name)
                elif bucket in live:
                    live.discard(bucket)
                    deletes.add((table_name, bucket.chain))
                    tops_dirty.add(table_name)
        for table_name in sorted(tops_dirty):
            for chain in top_chains(table_name, self._live[table_name]):
                writes[chain.key] = chain
        deletes -= writes.keys()
        ordered = sorted(writes.values(), key=lambda c: (_TABLE_INDEX[c.table], c.name))
        return render_restore_text(ordered, sorted(deletes))

    def _add(self, key: ServicePortName, dispatch: DispatchRules) -> None:
        self._dispatch[key] = dispatch
        for bucket in dispatch:
            self._members.setdefault(bucket, set()).add(key)

    def _remove(self, key: ServicePortName) -> None:
        for bucket in self._dispatch.pop(key, {}):
            members = self._members.get(bucket)
            if members is not None:
                members.discard(key)
                if not members:
                    del self._members[bucket]

    def _bucket_chains(self, bucket: Bucket) -> list[Chain]:
        """The bucket's chain in each table where it has rules (ports sorted by name)."""
        nat: list[Rule] = []
        filt: list[Rule] = []
        for key in sorted(self._members.get(bucket, ())):
            n, f = self._dispatch[key][bucket]
            nat += n
            filt += f
        out = []
        if nat:
            out.append(bucket_chain(NAT, bucket, nat))
        if filt:
            out.append(bucket_chain(FILTER, bucket, filt))
        return out
