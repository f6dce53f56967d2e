"""Kernel mode driver: applies rendered rulesets through libnftables (``nft -f`` as a
fallback; nftables full syncs by map flip with elements over netlink, see
``_full_nft_flip``) or ``iptables-restore``.

Each apply is one kernel transaction, so a failure leaves the previous rules
in place; the failure is raised as :class:`KernelApplyError`, logged and
counted, and the next sync is a full one. With ``netns`` set every command
runs inside that network namespace (``ip netns exec``), which is how the tests
and the benchmark keep away from the host's own tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import Counter, Histogram

from shiftnet.errors import ConfigError, InvalidInput, ShiftnetError
from shiftnet.proxy import conntrack, iptables, iptables_tools, nftables, nftnl
from shiftnet.proxy import metrics as proxy_metrics
from shiftnet.proxy.libnft import LibnftSession, LibnftUnavailable
from shiftnet.proxy.model import ServiceTable, TableDiff
from shiftnet.runner import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

SYNC_SECONDS = Histogram(
    "shiftnet_proxy_kernel_sync_seconds", "Time to apply one ruleset change", ["mode", "kind"]
)
SYNC_FAILURES = Counter(
    "shiftnet_proxy_kernel_sync_failures_total", "Ruleset applies the kernel refused", ["mode"]
)

_NETNS_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
IPT_NFT_SERVICES_PER_RESTORE = 500  # service ports per restore of a full sync with iptables-nft
IPT_NFT_CHAINS_PER_RESTORE = 5000  # chains per restore of a cleanup with iptables-nft
_OWN_CHAIN_RE = re.compile(r"^:(KUBE-(?:SVC|SVL|EXT|SEP|DST)-[A-Z2-7]{16}) ", re.M)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC while a full sync builds ~10 objects per endpoint that are all
    alive until it ends: collections then only rescan them (~30 % of the render time
    at 10,000 services, more in a proxy holding its informers' objects)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
    iptables_backend: str = "auto"  # "nft", "legacy" or "auto" (iptables_tools.detect_backend)
    iptables_sync_period: float = 30.0  # iptables: a full sync at least this often (kube-proxy)
    iptables_min_sync_period: float = 1.0  # iptables: at most one sync per this (kube-proxy)
    nft_flip: bool = True  # full syncs by map flip (False: the whole table as one nft text)

    def __post_init__(self) -> None:
        if self.mode not in ("nftables", "iptables"):
            raise ConfigError(f"proxy mode {self.mode!r} is not nftables or iptables")
        if self.iptables_backend not in iptables_tools.BACKENDS:
            raise ConfigError(
                f"iptables backend {self.iptables_backend!r} is not one of "
                f"{', '.join(iptables_tools.BACKENDS)}"
            )
        for name in ("iptables_sync_period", "iptables_min_sync_period"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value < float("inf")):
                raise ConfigError(f"{name.replace('_', '-')} {value!r} is not a number of seconds")
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
    try:
        out, err = await proc.communicate(stdin.encode())
    except (RuntimeError, BrokenPipeError, ConnectionResetError):
        # It exited before reading its input (the pipe was closed under us): what it said
        # is the error, not the closed pipe.
        assert proc.stdout is not None and proc.stderr is not None
        out, err = await proc.stdout.read(), await proc.stderr.read()
        await proc.wait()
        if proc.returncode == 0:
            tool = argv[-2] if netns else argv[0]
            raise KernelApplyError(f"{tool} exited before its input") from None
    if proc.returncode != 0:
        first = err.decode(errors="replace").strip().splitlines()[:3]
        raise KernelApplyError(f"{argv[-2] if netns else argv[0]} failed: {' | '.join(first)}")
    return out.decode(errors="replace")


class KernelProxier:
    """Keeps the kernel's NAT rules in line with the service table."""

    def __init__(self, config: KernelConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
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
        self._ipt_plan: iptables.IptPlan | None = None
        self._ipt_backend: str | None = None  # resolved "nft" / "legacy"
        self._ipt_full_at = float("-inf")  # clock time of the last full iptables sync
        # iptables hairpin as one rule (True) or a rule per endpoint; None: probe first
        self.hairpin_rule: bool | None = None
        self.last_kind = ""  # "full" or "partial": what the last successful sync did
        self.last_apply_seconds = 0.0
        self._libnft: LibnftSession | None = None
        self._libnft_failed = False
        self._netlink: nftnl.NftNetlink | None = None
        self._live_suffix: str | None = None  # which map set rules use; None: ask the kernel
        self.last_full_steps: dict[str, float] = {}  # seconds per step of the last fast full sync
        self.conntrack = conntrack.ConntrackCleaner(config.netns)

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
                    await self.apply_nft(script)
                elif not (self.config.nft_flip and await self._full_nft_flip(table)):
                    await self.apply_nft(nftables.render_full(table, self.nft), full=True)
            else:
                kind = await self._sync_iptables(table, diff)
        except KernelApplyError as exc:
            self.in_sync = False
            self.last_error = str(exc)
            SYNC_FAILURES.labels(self.config.mode).inc()
            log.error("kernel sync failed mode=%s kind=%s error=%s", self.config.mode, kind, exc)
            raise
        self.in_sync = True
        self.last_error = None
        self.last_kind = kind
        await self.conntrack.after_sync(table, diff)  # UDP flows stuck on a gone endpoint
        self.last_apply_seconds = time.perf_counter() - start
        SYNC_SECONDS.labels(self.config.mode, kind).observe(self.last_apply_seconds)
        log.info(
            "kernel sync mode=%s kind=%s services=%d seconds=%.3f",
            self.config.mode,
            kind,
            len(table.entries),
            self.last_apply_seconds,
        )

    async def _ipt(self, tool: str) -> str:
        """iptables / iptables-save / iptables-restore of the configured (or detected) backend."""
        if self._ipt_backend is None:
            backend = self.config.iptables_backend
            if backend == "auto":
                backend = await iptables_tools.detect_backend(self.config.netns)
            self._ipt_backend = backend
        return iptables_tools.tool(self._ipt_backend, tool)

    @property
    def iptables_backend(self) -> str | None:
        """The iptables tools in use ("nft" / "legacy"), once known."""
        return self._ipt_backend

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

    async def _full_nft_flip(self, table: ServiceTable) -> bool:
        """Full sync without parsing the map elements: fill standby maps over raw
        netlink, then one small nft transaction points the rules at them (atomic flip).

        False when this path is not available (no libnftables, or the kernel shows
        both map sets and which one is live is unknown): the caller then loads the
        whole table as text in one transaction.
        """
        session = await self._session()
        if session is None:
            return False
        steps: dict[str, float] = {}
        mark = time.perf_counter()

        def step(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            steps[name] = now - mark
            mark = now

        name = self.nft.table
        try:
            if self._netlink is None:
                self._netlink = await session.call(nftnl.NftNetlink)
            nl = self._netlink
            chains, sets = await session.call(lambda: nl.names(name))
        except OSError as exc:
            raise KernelApplyError(f"listing nft table {name}: {exc}") from None
        live = self._live_suffix
        if live is None:
            found = [s for s in nftables.MAP_SUFFIXES if nftables.SERVICE_MAP + s in sets]
            if len(found) > 1:
                log.info("both nft map sets present, loading the table as text table=%s", name)
                return False
            live = found[0] if found else nftables.MAP_SUFFIXES[1]
        standby = next(s for s in nftables.MAP_SUFFIXES if s != live)
        cfg = dataclasses.replace(self.nft, maps_suffix=standby)
        with _gc_paused():
            described = nftables.describe_all(table, cfg)
            verdict_maps = {nftables.map_name(m, cfg) for m in nftables.VERDICT_MAPS}
            try:
                runs = {
                    m: nftnl.encode_verdicts(v) if m in verdict_maps else nftnl.encode_endpoints(v)
                    for m, v in nftables.map_elements(described).items()
                }
            except InvalidInput as exc:
                raise KernelApplyError(str(exc)) from None
            prepare = nftables.render_prepare(described, cfg, sets)
            swap = nftables.render_swap(described, cfg, chains, sets)
        step("render_s")
        await self._run_libnft(session, prepare)
        step("prepare_s")
        try:
            batches = await session.call(lambda: nl.add_elements(name, runs))
        except OSError as exc:
            raise KernelApplyError(f"loading map elements: {exc}") from None
        step("elements_s")
        await self._run_libnft(session, swap)
        step("swap_s")
        self.nft, self._live_suffix = cfg, standby
        self.last_full_steps = steps
        log.info(
            "nft full sync by flip maps=%s batches=%d %s",
            standby or "a",
            batches,
            " ".join(f"{k}={v:.3f}" for k, v in steps.items()),
        )
        return True

    async def _session(self) -> LibnftSession | None:
        if self._libnft is None and not self._libnft_failed:
            self._libnft = LibnftSession(self.config.netns)
        if self._libnft is None:
            return None
        try:
            await self._libnft.call(lambda: None)
        except LibnftUnavailable as exc:
            log.info("libnftables unavailable, using the nft binary reason=%s", exc)
            self._libnft.close()
            self._libnft, self._libnft_failed = None, True
            return None
        return self._libnft

    @staticmethod
    async def _run_libnft(session: LibnftSession, script: str) -> None:
        rc, err = await session.run(script)
        if rc != 0:
            lines = [line for line in err.strip().splitlines() if line.strip()][:3]
            raise KernelApplyError(f"nft refused the ruleset: {' | '.join(lines)}")

    def close(self) -> None:
        self.conntrack.close()
        if self._netlink is not None and self._libnft is not None:
            self._libnft._pool.submit(self._netlink.close)
        self._netlink = None
        if self._libnft is not None:
            self._libnft.close()
            self._libnft = None

    async def _existing_ipt_chains(self) -> set[tuple[str, str]]:
        """(table, name) of our hashed chains in the kernel: only names, to find stale ones."""
        found: set[tuple[str, str]] = set()
        save = await self._ipt("iptables-save")
        for tbl in ("nat", "filter"):
            out = await run_command([save, "-t", tbl], netns=self.config.netns)
            found |= {(tbl, m.group(1)) for m in _OWN_CHAIN_RE.finditer(out)}
        return found

    async def _sync_iptables(self, table: ServiceTable, diff: TableDiff | None) -> str:
        """A partial restore of what ``diff`` changed, or a full one: "full" / "partial"."""
        now = self.clock.monotonic()
        plan = self._ipt_plan
        due = now - self._ipt_full_at >= self.config.iptables_sync_period
        restore = [await self._ipt("iptables-restore"), "--noflush"]
        big = (  # one restore that large would be slow with iptables-nft: full, in parts
            diff is not None
            and self._ipt_backend == "nft"
            and len(diff.added) + len(diff.removed) + len(diff.changed)
            > IPT_NFT_SERVICES_PER_RESTORE
        )
        if plan is None or not self.in_sync or diff is None or due or big:
            self._ipt_plan = None  # until this full sync succeeds
            await self._ensure_jumps()
            if self.hairpin_rule is None:
                self.hairpin_rule = await self._probe_hairpin_rule(restore)
            self.ipt = dataclasses.replace(self.ipt, hairpin_rule=self.hairpin_rule)
            plan = iptables.IptPlan(self.ipt)
            # iptables-nft-restore slows down more than linearly with the size of one
            # input (1,000 services 1.5 s, 2,000 40 s, 4,000 200 s here): parts
            per_part = IPT_NFT_SERVICES_PER_RESTORE if self._ipt_backend == "nft" else None
            existing = await self._existing_ipt_chains()
            for text in plan.full_parts(table, existing, per_part):
                await run_command(restore, text, self.config.netns)
            self._ipt_plan, self._ipt_full_at = plan, now
            return "full"
        text = plan.partial(diff)
        if text:
            try:
                await run_command(restore, text, self.config.netns)
            except KernelApplyError:
                proxy_metrics.IPTABLES_PARTIAL_RESTORE_FAILURES.inc()
                raise
        return "partial"

    async def _probe_hairpin_rule(self, restore: list[str]) -> bool:
        """Whether the kernel takes the one-rule hairpin match (``xt_bpf``)."""
        try:
            await run_command(restore, iptables.render_hairpin_probe(), self.config.netns)
        except KernelApplyError as exc:
            log.warning("iptables hairpin by a rule per endpoint reason=%s", exc)
            return False
        return True

    async def _ensure_jumps(self) -> None:
        """The jumps from the built-in chains to ours (``-C``, else ``-I``), each target
        chain created first if missing (``-N``: declaring it in a restore would flush it)."""
        ipt = await self._ipt("iptables")
        for tbl, chain, target in iptables.JUMPS:
            with contextlib.suppress(KernelApplyError):  # exists already
                await run_command([ipt, "-w", "-t", tbl, "-N", target], netns=self.config.netns)
            rule = [chain, "-j", target]
            try:
                await run_command([ipt, "-w", "-t", tbl, "-C", *rule], netns=self.config.netns)
            except KernelApplyError:
                await run_command([ipt, "-w", "-t", tbl, "-I", *rule], netns=self.config.netns)

    async def cleanup(self) -> None:
        """Remove everything this proxier installed (used on `--cleanup` and in tests)."""
        if self.config.mode == "nftables":
            name = nftables.nft_value("name", self.config.nft_table)
            await self.apply_nft(f"add table ip {name}\ndelete table ip {name}\n")
            self.nft = dataclasses.replace(self.nft, maps_suffix="")
            self._live_suffix = None
        else:
            ipt = await self._ipt("iptables")
            for tbl, chain, target in iptables.JUMPS:
                with contextlib.suppress(KernelApplyError):
                    await run_command(
                        [ipt, "-w", "-t", tbl, "-D", chain, "-j", target],
                        netns=self.config.netns,
                    )
            per_part = IPT_NFT_CHAINS_PER_RESTORE if self._ipt_backend == "nft" else None
            restore = [await self._ipt("iptables-restore"), "--noflush"]
            for text in iptables.render_cleanup(await self._existing_ipt_chains(), per_part):
                await run_command(restore, text, self.config.netns)
            self._ipt_plan = None
        self.in_sync = False
