"""Kernel mode driver: applies rendered rulesets with ``nft -f`` / ``iptables-restore``.

Each apply is one kernel transaction, so a failure leaves the previous rules
in place; the failure is raised as :class:`KernelApplyError`, logged and
counted, and the next sync is a full one. With ``netns`` set every command
runs inside that network namespace (``ip netns exec``), which is how the tests
and the benchmark keep away from the host's own tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass

from prometheus_client import Counter, Histogram

from shiftnet.errors import ConfigError, ShiftnetError
from shiftnet.proxy import iptables, nftables
from shiftnet.proxy.libnft import LibnftSession, LibnftUnavailable
from shiftnet.proxy.model import ServiceTable, TableDiff

log = logging.getLogger(__name__)

SYNC_SECONDS = Histogram(
    "shiftnet_proxy_kernel_sync_seconds", "Time to apply one ruleset change", ["mode", "kind"]
)
SYNC_FAILURES = Counter(
    "shiftnet_proxy_kernel_sync_failures_total", "Ruleset applies the kernel refused", ["mode"]
)

_NETNS_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class KernelApplyError(ShiftnetError):
    """The kernel refused a ruleset; the previous rules are still in force."""


@dataclass(frozen=True)
class KernelConfig:
    mode: str = "nftables"  # or "iptables"
    netns: str | None = None
    spread: str = "random"
    cluster_cidr: str | None = None
    masquerade_all: bool = False
    nft_table: str = "shiftnet-proxy"
    iptables_backend: str = "nft"  # or "legacy" (iptables-legacy-restore: x_tables, much faster)

    def __post_init__(self) -> None:
        if self.mode not in ("nftables", "iptables"):
            raise ConfigError(f"proxy mode {self.mode!r} is not nftables or iptables")
        if self.iptables_backend not in ("nft", "legacy"):
            raise ConfigError(f"iptables backend {self.iptables_backend!r} is not nft or legacy")
        if self.netns is not None and not _NETNS_RE.match(self.netns):
            raise ConfigError(f"network namespace name {self.netns!r} is not valid")


async def run_command(argv: list[str], stdin: str = "", netns: str | None = None) -> str:
    """Run argv (inside ``netns``), feed stdin; raise KernelApplyError with its stderr."""
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin.encode())
    if proc.returncode != 0:
        first = err.decode(errors="replace").strip().splitlines()[:3]
        raise KernelApplyError(f"{argv[-2] if netns else argv[0]} failed: {' | '.join(first)}")
    return out.decode(errors="replace")


class KernelProxier:
    """Keeps the kernel's NAT rules in line with the service table."""

    def __init__(self, config: KernelConfig) -> None:
        self.config = config
        self.nft = nftables.NftConfig(
            table=config.nft_table,
            spread=config.spread,
            cluster_cidr=config.cluster_cidr,
            masquerade_all=config.masquerade_all,
        )
        self.ipt = iptables.IptConfig(
            spread=config.spread,
            cluster_cidr=config.cluster_cidr,
            masquerade_all=config.masquerade_all,
        )
        self.in_sync = False  # False: the next apply is a full one
        self.last_error: str | None = None
        self._ipt_chains: set[str] | None = None
        self.last_apply_seconds = 0.0
        self._libnft: LibnftSession | None = None
        self._libnft_failed = False

    async def sync(self, table: ServiceTable, diff: TableDiff | None = None) -> None:
        """Apply ``table``; with ``diff`` (and nftables, and in sync) only what changed."""
        start = time.perf_counter()
        kind = "full"
        try:
            if self.config.mode == "nftables":
                if self.in_sync and diff is not None:
                    kind = "partial"
                    if diff.empty:
                        return
                    script = nftables.render_update(nftables.update_pairs(diff, self.nft), self.nft)
                else:
                    script = nftables.render_full(table, self.nft)
                await self.apply_nft(script, full=kind == "full")
            else:
                await self._sync_iptables(table)
        except KernelApplyError as exc:
            self.in_sync = False
            self.last_error = str(exc)
            SYNC_FAILURES.labels(self.config.mode).inc()
            log.error("kernel sync failed mode=%s kind=%s error=%s", self.config.mode, kind, exc)
            raise
        self.in_sync = True
        self.last_error = None
        self.last_apply_seconds = time.perf_counter() - start
        SYNC_SECONDS.labels(self.config.mode, kind).observe(self.last_apply_seconds)
        log.info(
            "kernel sync mode=%s kind=%s services=%d seconds=%.3f",
            self.config.mode,
            kind,
            len(table.entries),
            self.last_apply_seconds,
        )

    def _ipt(self, tool: str) -> str:
        """iptables / iptables-save / iptables-restore of the configured backend."""
        if self.config.iptables_backend == "legacy":
            return tool.replace("iptables", "iptables-legacy", 1)
        return tool

    async def apply_nft(self, script: str, full: bool = False) -> None:
        """One nft transaction: in-process through libnftables, else with ``nft -f -``."""
        if self._libnft is None and not self._libnft_failed:
            self._libnft = LibnftSession(self.config.netns)
        if self._libnft is not None:
            try:
                rc, err = await self._libnft.run(script, fresh=full)
            except LibnftUnavailable as exc:
                log.info("libnftables unavailable, using the nft binary reason=%s", exc)
                self._libnft.close()
                self._libnft, self._libnft_failed = None, True
            else:
                if rc != 0:
                    lines = [line for line in err.strip().splitlines() if line.strip()][:3]
                    raise KernelApplyError(f"nft refused the ruleset: {' | '.join(lines)}")
                return
        await run_command(["nft", "-f", "-"], script, self.config.netns)

    def close(self) -> None:
        if self._libnft is not None:
            self._libnft.close()
            self._libnft = None

    async def _existing_ipt_chains(self) -> set[str]:
        found: set[str] = set()
        for tbl in ("nat", "filter"):
            out = await run_command(
                [self._ipt("iptables-save"), "-t", tbl], netns=self.config.netns
            )
            found |= {m.group(1) for m in re.finditer(r"^:(KUBE-(?:SVC|SEP)-\S+)", out, re.M)}
        return found

    async def _sync_iptables(self, table: ServiceTable) -> None:
        if self._ipt_chains is None or not self.in_sync:
            await self._ensure_jumps()
            self._ipt_chains = await self._existing_ipt_chains()
        text, owned = iptables.render_restore(table, self.ipt, self._ipt_chains)
        await run_command([self._ipt("iptables-restore"), "--noflush"], text, self.config.netns)
        self._ipt_chains = owned

    async def _ensure_jumps(self) -> None:
        # our chains must exist before a jump to them can be added
        base = "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-POSTROUTING - [0:0]\nCOMMIT\n"
        base += "*filter\n:KUBE-SERVICES - [0:0]\nCOMMIT\n"
        await run_command([self._ipt("iptables-restore"), "--noflush"], base, self.config.netns)
        for tbl, chain, target in iptables.JUMPS:
            rule = [chain, "-j", target]
            try:
                await run_command(
                    [self._ipt("iptables"), "-w", "-t", tbl, "-C", *rule], netns=self.config.netns
                )
            except KernelApplyError:
                await run_command(
                    [self._ipt("iptables"), "-w", "-t", tbl, "-I", *rule], netns=self.config.netns
                )

    async def cleanup(self) -> None:
        """Remove everything this proxier installed (used on `--cleanup` and in tests)."""
        if self.config.mode == "nftables":
            name = nftables.nft_value("name", self.config.nft_table)
            await self.apply_nft(f"add table ip {name}\ndelete table ip {name}\n")
        else:
            for tbl, chain, target in iptables.JUMPS:
                with contextlib.suppress(KernelApplyError):
                    await run_command(
                        [self._ipt("iptables"), "-w", "-t", tbl, "-D", chain, "-j", target],
                        netns=self.config.netns,
                    )
            chains = await self._existing_ipt_chains()
            text, _ = iptables.render_restore(ServiceTable(), self.ipt, chains)
            await run_command([self._ipt("iptables-restore"), "--noflush"], text, self.config.netns)
        self.in_sync = False
