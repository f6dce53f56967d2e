"""Apply a rendered HAProxy file set: through the runtime API when it can, by a reload when not.

Why two paths: a reload forks new workers and parses everything again, so it
is rate-limited (``RELOAD_INTERVAL``) and coalesced (many changes, one reload);
but most changes in a live cluster are pods coming and going, which only move
addresses, weights and states of ``server`` lines. When the new configuration
equals the running one with those four normalised away, the driver sends
``set server`` commands at once, writes the new files to disk so a later reload
changes nothing, and does not reload. Anything else (new backends, maps,
certificates, more members than spare slots) goes through a checked reload;
an endpoint-only change that still needs one is counted as a fallback.

Every reload candidate is first written to a staging directory and checked
with ``haproxy -c`` there; only a configuration that passes replaces the live
files. When the check or the reload fails, the last good files are put back
on disk (so a HAProxy restart serves them too), the error is logged, counted
and kept in :attr:`HAProxyDriver.last_error`, and the next change tries again.
A refused check is also handed to :attr:`HAProxyDriver.on_rejected`: the router
then finds the routes HAProxy refuses (:meth:`HAProxyDriver.check_files` in a
scratch directory, ``isolation.py``) and applies the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shiftnet.router import metrics
from shiftnet.router.haproxy.files import read_file_set, write_file_set
from shiftnet.router.haproxy.live import (
    Fallback,
    LiveState,
    plan,
    section_commands,
    served_section,
)
from shiftnet.router.haproxy.process import (
    CONFIG_NAME,
    ConfigCheckFailed,
    HAProxyError,
    HAProxyProcess,
    ReloadFailed,
)
from shiftnet.router.haproxy.runtime import (
    RuntimeAPI,
    RuntimeAPIError,
    server_change_commands,
)
from shiftnet.runner import CoalescingRunner

log = logging.getLogger(__name__)

ADMIN_SOCKET = "admin.sock"
OWED_RELOAD_QUIET = 5.0  # seconds without changes before a reload owed by runtime changes
OWED_RELOAD_MAX = 30.0  # ... but never later than this after the first such change
ALIASES_INDEX = "aliases.json"  # describe.ALIASES_INDEX (describe imports the driver's modules)


@dataclass(frozen=True)
class ServerLine:
    """The runtime-changeable part of one ``server`` line."""

    address: str
    port: int
    weight: int
    disabled: bool


_SECTION_RE = re.compile(r"^(backend|listen)\s+(\S+)")
_OTHER_SECTION_RE = re.compile(r"^(global|defaults|frontend|peers|resolvers|userlist|program)\b")
_SERVER_RE = re.compile(r"^(\s+server\s+)(\S+)\s+(\S+)(.*)$")
_ADDR_RE = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$")
_WEIGHT_RE = re.compile(r"\s+weight\s+(\d+)")
_DISABLED_RE = re.compile(r"\s+disabled(?=\s|$)")


@dataclass(frozen=True)
class ParsedConfig:
    """A configuration split into its reload-only skeleton and its server slots."""

    skeleton: str  # the text with every server line's address/weight/disabled blanked
    without_servers: str  # the text with server lines removed entirely
    servers: dict[tuple[str, str], ServerLine]


def parse_servers(text: str) -> ParsedConfig:
    """Split ``haproxy.cfg`` into the part a reload must apply and the server slots."""
    skeleton: list[str] = []
    bare: list[str] = []
    servers: dict[tuple[str, str], ServerLine] = {}
    backend: str | None = None
    for line in text.splitlines():
        m = _SECTION_RE.match(line)
        if m:
            backend = m[2]
        elif _OTHER_SECTION_RE.match(line):
            backend = None
        s = _SERVER_RE.match(line) if backend else None
        a = _ADDR_RE.match(s[3]) if s else None
        if s is None or a is None or backend is None:
            skeleton.append(line)
            bare.append(line)
            continue
        rest = s[4]
        w = _WEIGHT_RE.search(rest)
        servers[(backend, s[2])] = ServerLine(
            address=a[1],
            port=int(a[2]),
            weight=int(w[1]) if w else 1,
            disabled=bool(_DISABLED_RE.search(rest)),
        )
        rest = _DISABLED_RE.sub("", _WEIGHT_RE.sub("", rest))
        skeleton.append(f"{s[1]}{s[2]} -{rest}")
    return ParsedConfig("\n".join(skeleton), "\n".join(bare), servers)


def server_commands(old: ParsedConfig, new: ParsedConfig) -> list[str]:
    """The runtime commands that turn ``old``'s server slots into ``new``'s."""
    cmds: list[str] = []
    for key in sorted(new.servers):
        before, after = old.servers[key], new.servers[key]
        if before == after:
            continue
        be, srv = key
        cmds += server_change_commands(be, srv, before, after)
    return cmds


class HAProxyDriver:
    """Owns one HAProxy and the directory it serves from (``<work_dir>/conf``)."""

    def __init__(
        self,
        work_dir: Path,
        reload_interval: float = 5.0,
        binary: str | None = None,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.process = (
            HAProxyProcess(self.work_dir, binary=binary)
            if binary
            else HAProxyProcess(self.work_dir)
        )
        self.staging_dir = self.work_dir / "staging"
        self.scratch_dir = self.work_dir / "scratch"  # check_files: candidate sets
        # Told when ``haproxy -c`` refuses a file set, and when a set was checked and loaded.
        self.on_rejected: Callable[[ConfigCheckFailed], None] | None = None
        self.on_applied: Callable[[dict[str, bytes]], None] | None = None
        self._owed_marker = self.work_dir / "reload-owed"
        self.runtime = RuntimeAPI(self.process.run_dir / ADMIN_SOCKET)
        self.reloads = 0
        self.runtime_applies = 0
        self.fallbacks = 0
        self.last_error: Exception | None = None
        self._desired: dict[str, bytes] | None = None
        self._desired_split: tuple[str, dict[str, str]] | None = None  # its sections, if known
        self._loaded: dict[str, bytes] | None = None  # what HAProxy last loaded (start/reload)
        self._on_disk: dict[str, bytes] | None = None  # what conf/ holds
        self._live: LiveState | None = None  # what HAProxy effectively serves
        self._apply_lock = asyncio.Lock()
        self._urgent = False
        self._reloading = False
        self.owed_reload_quiet = OWED_RELOAD_QUIET
        self.owed_reload_max = OWED_RELOAD_MAX
        self._last_change = 0.0
        self._owed_since = 0.0
        self._owed_task: asyncio.Task[None] | None = None
        self._runner = CoalescingRunner(
            self._sync, min_interval=reload_interval, name="haproxy-reload"
        )
        self._supervisor: asyncio.Task[None] | None = None

    # -------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Adopt a HAProxy left by an earlier router, then keep HAProxy alive."""
        self.process.conf_dir.mkdir(parents=True, exist_ok=True)
        self.process.run_dir.mkdir(parents=True, exist_ok=True)
        if await self.process.adopt():
            self._loaded = read_file_set(self.process.conf_dir)
            self._on_disk = dict(self._loaded)
            # A router that stopped owing a reload left HAProxy serving runtime
            # changes (spare backends) it can no longer describe: reload once first.
            owed = self._owed_marker.exists()
            self._live = None if owed else LiveState.of(self._loaded)
        await self._runner.start()
        self._supervisor = asyncio.get_running_loop().create_task(
            self.process.supervise(), name="haproxy-supervisor"
        )

    async def stop(self, stop_haproxy: bool = True) -> None:
        """Stop watching; stop HAProxy too unless the caller wants it left serving."""
        if self._owed_task is not None:
            self._owed_task.cancel()
            await asyncio.gather(self._owed_task, return_exceptions=True)
            self._owed_task = None
        if self._supervisor is not None:
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
            self._supervisor = None
        await self._runner.stop()
        if stop_haproxy:
            await self.process.stop()

    # ------------------------------------------------------------------ apply
    async def apply(
        self, files: dict[str, bytes], split: tuple[str, dict[str, str]] | None = None
    ) -> None:
        """Make HAProxy serve ``files``: at once by runtime API, or by a coalesced reload.

        A change applied through the runtime API that leaves HAProxy serving
        something other than the files on disk (a new route on a spare backend,
        a deleted route's unused backend) still owes a reload: it is kicked
        here and runs in the background, bounded by ``RELOAD_INTERVAL``.
        """
        async with self._apply_lock:
            self._desired = dict(files)
            self._desired_split = split
            if self._live is not None and await self._try_runtime(files, split):
                if self._live.clean:
                    return
                if not self._urgent:
                    self._owe()  # served already: the clean-up reload can wait
                    return
        self._runner.kick()

    def _owe(self) -> None:
        """Schedule the reload a served runtime change still owes, once changes pause.

        Everything is served already, so there is no hurry: the reload waits
        for ``OWED_RELOAD_QUIET`` seconds without changes (at most
        ``OWED_RELOAD_MAX``), so a stream of route changes is not slowed by
        reloads holding the apply lock, then goes through the coalesced runner.
        """
        now = time.monotonic()
        self._last_change = now
        if self._owed_task is None or self._owed_task.done():
            self._owed_since = now
            self._owed_task = asyncio.get_running_loop().create_task(
                self._owed_reload(), name="haproxy-owed-reload"
            )

    async def _owed_reload(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            if self._live is None or self._live.clean:
                return
            now = time.monotonic()
            if (
                now - self._last_change >= self.owed_reload_quiet
                or now - self._owed_since >= self.owed_reload_max
            ):
                self._runner.kick()
                return

    async def apply_sections(self, sections: dict[str, str]) -> bool:
        """Serve new server slots of some backends at once; False when only a full apply can.

        The endpoint fast path: ``sections`` are freshly rendered backend
        sections (route backend name -> text) whose map entries did not
        change. The files on disk are left to the full apply that follows.
        """
        if self._reloading:
            # A reload holds the lock for as long as the new worker parses (seconds
            # at 10,000 routes); endpoint commands need not wait: whichever worker
            # gets them, the apply after the reload re-sends what the loaded files lack.
            return await self._apply_sections(sections)
        async with self._apply_lock:
            return await self._apply_sections(sections)

    async def _apply_sections(self, sections: dict[str, str]) -> bool:
        live = self._live
        if live is None or not self.process.alive():
            return False
        served = dict(live.sections)
        cmds: list[str] = []
        for backend, text in sections.items():
            name = live.aliases.get(backend, backend)
            old = live.sections.get(name)
            new = served_section(backend, text, name, old) if old is not None else None
            more = section_commands(name, old, new) if old is not None and new else None
            if new is None or more is None:
                return False
            served[name] = new
            cmds += more
        if not cmds:
            return True
        try:
            await self.runtime.batch(cmds)
        except RuntimeAPIError as err:
            log.warning("runtime endpoint update refused error=%s", err)
            return False
        live.sections = served
        live.clean = False  # the files on disk follow with the next full apply
        self.runtime_applies += 1
        metrics.RUNTIME_UPDATES.inc()
        log.info("haproxy endpoints updated without reload commands=%d", len(cmds))
        return True

    async def flush(self) -> None:
        """Apply the pending change now (tests, start-up)."""
        await self._runner.flush()

    @property
    def aliases(self) -> dict[str, str]:
        """Route backend -> spare backend serving it until the next reload."""
        return dict(self._live.aliases) if self._live is not None else {}

    async def _try_runtime(
        self, files: dict[str, bytes], split: tuple[str, dict[str, str]] | None = None
    ) -> bool:
        live = self._live
        assert live is not None
        if files == self._on_disk and live.clean:
            return True
        t0 = time.monotonic()
        outcome = plan(live, files, split)
        if isinstance(outcome, Fallback):
            self._fallback(outcome.reason)
            return False
        if not self.process.alive():
            return False
        for reason in sorted(outcome.deferred.values()):
            self._fallback(reason)
        self._urgent = bool(outcome.deferred)  # some route waits for the reload
        try:
            await self.runtime.batch(outcome.commands)
        except RuntimeAPIError as err:
            log.warning("runtime update refused, reloading instead error=%s", err)
            self._fallback("refused")
            return False
        if outcome.state.aliases != live.aliases:
            self._write_aliases(outcome.state.aliases)
        self._live = outcome.state
        if not outcome.state.clean:
            self._owed_marker.touch()
        t1 = time.monotonic()
        write_file_set(self.process.conf_dir, files, known=self._on_disk)
        self._on_disk = dict(files)
        metrics.WRITE_CONFIG_SECONDS.observe(time.monotonic() - t1)
        self.runtime_applies += 1
        metrics.RUNTIME_UPDATES.inc()
        log.info(
            "haproxy updated without reload commands=%d aliases=%d reload_owed=%s seconds=%.3f",
            len(outcome.commands),
            len(outcome.state.aliases),
            not outcome.state.clean,
            time.monotonic() - t0,
        )
        return True

    def _write_aliases(self, aliases: dict[str, str]) -> None:
        """``run/aliases.json``: which spare serves which route (``describe route`` reads it)."""
        run = self.work_dir / "run"
        run.mkdir(parents=True, exist_ok=True)
        tmp = run / (ALIASES_INDEX + ".tmp")
        tmp.write_text(json.dumps(aliases, sort_keys=True, indent=1))
        tmp.replace(run / ALIASES_INDEX)

    def _fallback(self, reason: str) -> None:
        self.fallbacks += 1
        metrics.RUNTIME_FALLBACKS.labels(reason=reason).inc()
        log.info("change needs a reload reason=%s", reason)

    def _serving(self, files: dict[str, bytes]) -> bool:
        return (
            self._live is not None
            and self._live.clean
            and files == self._on_disk
            and self.process.alive()
        )

    async def _sync(self) -> None:
        """The reload path: stage, check, write live, start or reload.

        ``haproxy -c`` (a second at 10,000 routes) runs without the apply
        lock, so runtime changes keep flowing meanwhile; whatever arrived
        during the reload is applied on top through the runtime API afterwards.
        """
        async with self._apply_lock:
            desired = self._desired
            if desired is None or self._serving(desired):
                return
        t0 = time.monotonic()
        try:
            write_file_set(self.staging_dir, desired)
            await self.process.check(self.staging_dir / CONFIG_NAME)
        except ConfigCheckFailed as err:
            self._failed("check", err)
            if self.on_rejected is not None:
                self.on_rejected(err)
            raise
        async with self._apply_lock:
            t_write = time.monotonic()
            write_file_set(self.process.conf_dir, desired, known=self._on_disk)
            self._on_disk = dict(desired)  # what the directory holds, whatever the reload says
            metrics.WRITE_CONFIG_SECONDS.observe(time.monotonic() - t_write + (t_write - t0))
            t1 = time.monotonic()
            self._reloading = True
            try:
                started = await self._load(True)
            except HAProxyError as err:
                # The master refused the files (or could not start on them): put the
                # last good set back so it is what any later start serves.
                if self._loaded is not None:
                    write_file_set(self.process.conf_dir, self._loaded)
                    self._on_disk = dict(self._loaded)
                    with contextlib.suppress(HAProxyError):
                        await self.process.ensure_running()
                self._failed("reload", err)
                raise
            finally:
                self._reloading = False
            metrics.RELOAD_SECONDS.observe(time.monotonic() - t1)
            metrics.RELOAD_FAILURE.set(0)
            self.last_error = None
            self._loaded = dict(desired)
            self._on_disk = dict(desired)
            self._live = LiveState.of(desired)
            self._owed_marker.unlink(missing_ok=True)
            self._write_aliases({})
            if self.on_applied is not None:
                self.on_applied(desired)
            log.info(
                "haproxy configuration applied started=%s reloads=%d seconds=%.3f",
                started,
                self.reloads,
                time.monotonic() - t0,
            )
            latest = self._desired
            # Changes that arrived during the check: on top, without another reload.
            if latest is not None and latest is not desired:
                if not await self._try_runtime(latest, self._desired_split) or self._urgent:
                    self._runner.kick()
                elif not self._live.clean:
                    self._owe()

    async def _load(self, changed: bool) -> bool:
        """Start HAProxy on the live files, or reload it; True when it had to be started.

        A master that dies in the middle of a reload (killed, crashed) is not a
        verdict on the files, which passed ``haproxy -c``: start afresh on them.
        """
        started = await self.process.ensure_running()
        if started or not changed:
            return started
        try:
            await self.process.reload()
        except ReloadFailed:
            raise
        except HAProxyError as err:
            log.warning("haproxy master lost during reload; starting it again error=%s", err)
            if await self.process.ensure_running():
                return True
            await self.process.reload()
        self.reloads += 1
        metrics.RELOADS.inc()
        return False

    def _failed(self, reason: str, err: Exception) -> None:
        self.last_error = err
        metrics.RELOAD_FAILURE.set(1)
        metrics.RELOAD_FAILURES.labels(reason=reason).inc()
        log.error(
            "haproxy configuration not applied; the last good one keeps serving reason=%s error=%s",
            reason,
            err,
        )

    async def check_files(self, files: dict[str, bytes]) -> ConfigCheckFailed | None:
        """``haproxy -c`` on a candidate file set in a scratch directory; None when it passes.

        Nothing live is touched. The directory is private (it holds route keys)
        and is emptied by :meth:`clear_scratch` once the caller is done.
        """
        self.scratch_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_file_set(self.scratch_dir, files)
        try:
            await self.process.check(self.scratch_dir / CONFIG_NAME)
        except ConfigCheckFailed as err:
            return err
        return None

    def clear_scratch(self) -> None:
        shutil.rmtree(self.scratch_dir, ignore_errors=True)

    def clear_staging(self) -> None:
        shutil.rmtree(self.staging_dir, ignore_errors=True)
