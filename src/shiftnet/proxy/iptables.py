"""The iptables mode's rulesets, laid out like kube-proxy's (pure).

The parts: ``iptables_rules`` (typed rules and chains), ``iptables_layout``
(service entries -> chains), ``iptables_plan`` (what a full or a partial sync
writes), ``iptables_writer`` (the one writer of iptables syntax, and
``ipt_value``, the one gate for values). This module names the entry points.

Restore inputs are applied with ``iptables-restore --noflush``: each chain
written is declared (which flushes it) and refilled, deleted chains are
flushed and removed with ``-X``, every other chain is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from shiftnet.proxy.iptables_layout import (
    JUMPS,
    MASQ_MARK,
    NODEPORTS,
    SERVICES,
    SPREADS,
    IptConfig,
    sep_chain,
    svc_chain,
)
from shiftnet.proxy.iptables_plan import IptPlan
from shiftnet.proxy.iptables_rules import FILTER, NAT, Chain, Rule, Verdict
from shiftnet.proxy.iptables_writer import (
    HASHED_CHAIN_RE,
    STATIC_CHAINS,
    ipt_value,
    render_restore_text,
)
from shiftnet.proxy.model import ServiceTable

__all__ = [
    "HASHED_CHAIN_RE",
    "JUMPS",
    "MASQ_MARK",
    "SPREADS",
    "IptConfig",
    "IptPlan",
    "ipt_value",
    "render_cleanup",
    "render_hairpin_probe",
    "render_restore",
    "sep_chain",
    "svc_chain",
]


def render_restore(
    table: ServiceTable,
    config: IptConfig,
    stale_chains: Iterable[str | tuple[str, str]] = (),
) -> tuple[str, set[str]]:
    """The full restore input for ``table`` and the hashed chains it writes.

    ``stale_chains`` are chains found in the kernel (a bare name is a nat
    chain); those the table no longer has are deleted.
    """
    plan = IptPlan(config)
    existing = [(NAT, c) if isinstance(c, str) else c for c in stale_chains]
    text = plan.full(table, existing)
    return text, plan.owned


def render_cleanup(
    existing: Iterable[tuple[str, str]], chains_per_part: int | None = None
) -> list[str]:
    """Restore inputs that flush and delete every chain of ours: the static ones and
    ``existing`` (table, name). One input, or with ``chains_per_part`` first inputs
    that flush that many chains each, then inputs that delete them (a chain can only
    go once nothing jumps to it, and flushing all of them first ensures that).

    The jumps from the built-in chains must be gone first (the driver deletes them).
    """
    static = [(NAT, name) for name in STATIC_CHAINS]
    static += [(FILTER, SERVICES), (FILTER, NODEPORTS)]
    chains = sorted({*static, *existing})
    if chains_per_part is None:
        return [render_restore_text([], chains)]
    size = max(1, chains_per_part)
    groups = [chains[i : i + size] for i in range(0, len(chains), size)]
    flushes = [render_restore_text([Chain(t, name, ()) for t, name in g]) for g in groups]
    return flushes + [render_restore_text([], g) for g in groups]


HAIRPIN_PROBE = "KUBE-HAIRPIN-PROBE"


def render_hairpin_probe() -> str:
    """One restore input, two transactions: a nat chain holding the hairpin rule (a
    kernel without ``xt_bpf`` refuses it), then that chain deleted."""
    chain = Chain(NAT, HAIRPIN_PROBE, (Rule(Verdict("RETURN"), hairpin=True),))
    return render_restore_text([chain]) + render_restore_text([], [(NAT, HAIRPIN_PROBE)])
