"""Apply a file set and its description: through the runtime API when it can, by a reload
when not.

Why two paths: a reload forks new workers and parses everything again, so it
is rate-limited (``RELOAD_INTERVAL``) and coalesced (many changes, one reload);
but most changes in a live cluster are pods coming and going, which only move
addresses, weights and states of server slots, or route map entries. The
planner (``live.py``) compares the served description with the new one; when
the runtime API can express the difference, the driver sends those commands
at once, writes the new files to disk so a later reload changes nothing, and
does not reload. Anything else (new backends no spare can serve,
certificates, more members than slots) goes through a checked reload; an
endpoint-only change that still needs one is counted as a fallback.

Every reload candidate is first written to a staging directory and checked
with ``haproxy -c`` there; only a configuration that passes replaces the live
files. When the check or the reload fails, the last good files are put back
on disk (so a HAProxy restart serves them too), the error is logged, counted
and kept in :attr:`HAProxyDriver.last_error`, and the next change tries again,
or ``RETRY_INTERVAL`` later without one (a file the configuration names may
have appeared meanwhile).
A refused check is also handed to :attr:`HAProxyDriver.on_rejected`: the router
then finds the routes HAProxy refuses (:meth:`HAProxyDriver.check_files` in a
scratch directory, ``isolation.py``) and applies the others.

A route certificate OpenSSL will not load (``cert_load.py``) is never sent:
that change goes by the checked reload. A runtime batch HAProxy refuses
partway all the same leaves the commands before the refused one applied
(and, in a ``;``-joined chunk, the rest of that chunk too): what HAProxy
serves is then neither the old picture nor the new one, so the driver
forgets its picture and plans nothing through the runtime API until a
reload has made a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from shiftnet.router import metrics
from shiftnet.router.haproxy import identity
from shiftnet.router.haproxy.cert_load import unloadable
from shiftnet.router.haproxy.description import Backend, Description
from shiftnet.router.haproxy.files import read_file_set, write_file_set
from shiftnet.router.haproxy.live import Fallback, LiveState, backend_commands, plan, served_as
from shiftnet.router.haproxy.loaded import LoadedRecord, write_record
from shiftnet.router.haproxy.names import ADMIN_SOCKET, ALIASES_INDEX, CONFIG_FILE
from shiftnet.router.haproxy.process import (
    ConfigCheckFailed,
    HAProxyError,
    HAProxyProcess,
    ReloadFailed,
)
from shiftnet.router.haproxy.runtime import RuntimeAPI, RuntimeAPIError
from shiftnet.runner import CoalescingRunner

log = logging.getLogger(__name__)

OWED_RELOAD_QUIET = 5.0  # seconds without changes before a reload owed by runtime changes
OWED_RELOAD_MAX = 30.0  # ... but never later than this after the first such change
RETRY_INTERVAL = 30.0  # seconds before a failed check or reload is tried again unasked
WATCH_INTERVAL = 0.5  # seconds between liveness checks of the HAProxy master
STATS_INTERVAL = 10.0  # seconds between two calls of on_stats


class HAProxyDriver:
    """Owns one HAProxy and the directory it serves from (``<work_dir>/conf``)."""

    def __init__(
        self,
        work_dir: Path,
        reload_interval: float = 5.0,
        binary: str | None = None,
        retry_interval: float = RETRY_INTERVAL,
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
        # Called every STATS_INTERVAL by the watch task (the router copies `show stat`).
        self.on_stats: Callable[[], Awaitable[None]] | None = None
        self._owed_marker = self.work_dir / "reload-owed"
        self._record = LoadedRecord()  # run/loaded.json (loaded.py): for diagnose
        self.runtime = RuntimeAPI(self.process.run_dir / ADMIN_SOCKET)
        self.reloads = 0
        self.runtime_applies = 0
        self.fallbacks = 0
        self.last_error: Exception | None = None
        self._desired: dict[str, bytes] | None = None
        self._desired_description: Description | None = None  # what _desired was written from
        self._loaded: dict[str, bytes] | None = None  # what HAProxy last loaded (start/reload)
        # An adopted HAProxy's files, until the first apply says what they describe.
        self._adopted: dict[str, bytes] | None = None
        self._on_disk: dict[str, bytes] | None = None  # what conf/ holds
        self._live: LiveState | None = None  # what HAProxy effectively serves
        self._apply_lock = asyncio.Lock()
        self._urgent = False
        self._reloading = False
        self.owed_reload_quiet = OWED_RELOAD_QUIET
        self.owed_reload_max = OWED_RELOAD_MAX
        # A refused check or reload is tried again after retry_interval on its own.
        self._runner = CoalescingRunner(
            self._sync,
            min_interval=reload_interval,
            max_interval=max(retry_interval, reload_interval),
            name="haproxy-reload",
        )
        self._watch_task: asyncio.Task[None] | None = None

    # -------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Adopt a HAProxy left by an earlier router, then keep HAProxy alive (``_watch``)."""
        self.process.conf_dir.mkdir(parents=True, exist_ok=True)
        # Own the socket directory; clear what killed routers left unadoptable.
        await asyncio.to_thread(self.process.claim_run_dir)
        if await self.process.adopt():
            self._loaded = read_file_set(self.process.conf_dir)
            self._on_disk = dict(self._loaded)
            # A router that stopped owing a reload left HAProxy serving runtime
            # changes (spare backends) it can no longer describe: reload once first.
            # Otherwise HAProxy serves the files on disk: when the first apply
            # brings the same files, its description is what HAProxy serves.
            if not self._owed_marker.exists():
                self._adopted = self._loaded
            running = await self._running_identity()
            self._note(loaded=running, served=running if self._adopted else None)
        await self._runner.start()
        self._watch_task = asyncio.get_running_loop().create_task(
            self._watch(), name="haproxy-watch"
        )

    async def _watch(self) -> None:
        """Forever: restart a dead HAProxy every ``WATCH_INTERVAL``, and call
        :attr:`on_stats` every ``STATS_INTERVAL`` (one task for both periodic looks)."""
        stats_due = time.monotonic() + STATS_INTERVAL
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            restarts = self.process.restarts
            await self.process.restart_if_dead()
            if self.process.restarts != restarts:
                await self._restarted()
            now = time.monotonic()
            if self.on_stats is None:
                stats_due = now + STATS_INTERVAL
            elif now >= stats_due:
                stats_due = now + STATS_INTERVAL
                try:
                    await self.on_stats()
                except RuntimeAPIError:
                    pass  # HAProxy restarting or reloading: the next poll catches up
                except Exception as err:  # a stats bug must not stop the liveness checks
                    log.error("haproxy stats poll failed error=%s", err)

    async def _restarted(self) -> None:
        """A dead HAProxy was started again on the files on disk: it serves those, not the
        runtime changes the dead one had (routes on spares, emptied slots), so the
        picture is made from them again; changes planned from the old one would name
        spares no map entry uses any more."""
        async with self._apply_lock:
            on_disk = self._on_disk
            if on_disk is None:
                return
            if self._desired_description is not None and on_disk == self._desired:
                self._serves(on_disk, self._desired_description)
                return
            # Files older than the wanted ones (a refused check left the last good set):
            # nothing is known to be served as planned until the reload brings them.
            self._loaded = dict(on_disk)
            self._live = None
            self._owed_marker.touch()
            self._note(loaded=_identity(on_disk), served=None)
        self._runner.kick()

    def _serves(self, files: dict[str, bytes], description: Description, **note: object) -> None:
        """HAProxy has just loaded ``files`` (a reload, a restart): they are the picture,
        nothing is owed, no spare serves a route (``note``: more for ``run/loaded.json``)."""
        self._loaded = dict(files)
        self._live = LiveState.of(description)
        self._owed_marker.unlink(missing_ok=True)
        self._write_aliases({})
        loaded = _identity(files)
        self._note(loaded=loaded, served=loaded, **note)

    async def stop(self, stop_haproxy: bool = True) -> None:
        """Stop watching; stop HAProxy too unless the caller wants it left serving."""
        if self._watch_task is not None:
            self._watch_task.cancel()
            await asyncio.gather(self._watch_task, return_exceptions=True)
            self._watch_task = None
        await self._runner.stop()
        if stop_haproxy:
            await self.process.stop()
        else:
            self.process.release_run_dir()

    # ------------------------------------------------------------------ apply
    async def apply(self, files: dict[str, bytes], description: Description) -> None:
        """Make HAProxy serve ``files``, written from ``description``: at once by runtime API,
        or by a coalesced reload.

        A change applied through the runtime API that leaves HAProxy serving
        something other than the files on disk (a new route on a spare backend,
        a deleted route's unused backend) still owes a reload: it is kicked
        here and runs in the background, bounded by ``RELOAD_INTERVAL``.
        """
        async with self._apply_lock:
            self._desired = dict(files)
            self._desired_description = description
            if self._adopted is not None:
                if self._live is None and files == self._adopted:
                    self._live = LiveState.of(description)
                self._adopted = None
            if self._live is not None and await self._try_runtime(files, description):
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
        reloads holding the apply lock: a quiet kick of the reload runner.
        """
        self._runner.kick_when_quiet(self.owed_reload_quiet, at_most=self.owed_reload_max)

    async def apply_backends(self, backends: dict[str, Backend]) -> bool:
        """Serve new server slots of some backends at once; False when only a full apply can.

        The endpoint fast path: ``backends`` are freshly described route
        backends whose map entries did not change. The files on disk are left
        to the full apply that follows.
        """
        if self._reloading:
            # A reload holds the lock for as long as the new worker parses (seconds
            # at 10,000 routes); endpoint commands need not wait: whichever worker
            # gets them, the apply after the reload re-sends what the loaded files lack.
            return await self._apply_backends(backends)
        async with self._apply_lock:
            return await self._apply_backends(backends)

    async def _apply_backends(self, backends: dict[str, Backend]) -> bool:
        live = self._live
        if live is None or not self.process.alive():
            return False
        served = dict(live.backends)
        cmds: list[str] = []
        for name, backend in backends.items():
            old = live.backends.get(live.aliases.get(name, name))
            new = served_as(backend, old) if old is not None else None
            try:
                more = backend_commands(old, new) if old is not None and new else None
            except RuntimeAPIError:
                more = None
            if old is None or new is None or more is None:
                return False
            served[old.name] = new
            cmds += more
        if not cmds:
            return True
        try:
            await self.runtime.batch(cmds)
        except RuntimeAPIError as err:
            log.warning("runtime endpoint update refused, reloading instead error=%s", err)
            if live is self._live:  # not replaced by a reload meanwhile
                self._forget()
            self._runner.kick()
            return False
        live.backends = served
        live.clean = False  # the files on disk follow with the next full apply
        self.runtime_applies += 1
        metrics.RUNTIME_UPDATES.inc()
        log.info("haproxy endpoints updated without reload commands=%d", len(cmds))
        return True

    async def flush(self) -> None:
        """Apply the pending change now (tests, start-up)."""
        await self._runner.flush()

    @property
    def live_backends(self) -> Mapping[str, Backend]:
        """The backends HAProxy runs now, by proxy name (spares under their own names)."""
        return self._live.backends if self._live is not None else {}

    @property
    def aliases(self) -> dict[str, str]:
        """Route backend -> spare backend serving it until the next reload."""
        return dict(self._live.aliases) if self._live is not None else {}

    async def _try_runtime(self, files: dict[str, bytes], description: Description) -> bool:
        live = self._live
        assert live is not None
        if files == self._on_disk and live.clean:
            return True
        t0 = time.monotonic()
        outcome = plan(live, description)
        if isinstance(outcome, Fallback):
            self._fallback(outcome.reason)
            return False
        if not self.process.alive():
            return False
        if outcome.state.files is not live.files:
            bad = await asyncio.to_thread(unloadable, live.files, description.files)
            if bad:  # HAProxy would refuse it partway, disturbing other routes' connections
                log.info("certificate OpenSSL will not load, reloading instead files=%s", bad[:5])
                self._fallback("certificate")
                return False
        for reason in sorted(outcome.deferred.values()):
            self._fallback(reason)
        self._urgent = bool(outcome.deferred)  # some route waits for the reload
        try:
            await self.runtime.batch(outcome.commands)
        except RuntimeAPIError as err:
            log.warning("runtime update refused, reloading instead error=%s", err)
            self._forget()
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
        self._note(served=_identity(files) if outcome.state.clean else None)
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

    def _forget(self) -> None:
        """HAProxy refused a batch partway: what it serves is unknown until a reload, so
        nothing is planned from the old picture, and a restarted router reloads first."""
        self._live = None
        self._owed_marker.touch()
        self._note(served=None)

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
            description = self._desired_description
            if desired is None or description is None or self._serving(desired):
                return
        t0 = time.monotonic()
        try:
            write_file_set(self.staging_dir, desired)
            await self.process.check(self.staging_dir / CONFIG_FILE)
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
                    self._note(served=None)
                    with contextlib.suppress(HAProxyError):
                        await self.process.ensure_running()
                self._failed("reload", err)
                raise
            finally:
                self._reloading = False
            metrics.RELOAD_SECONDS.observe(time.monotonic() - t1)
            metrics.RELOAD_FAILURE.set(0)
            self.last_error = None
            self._on_disk = dict(desired)
            self._serves(desired, description, failed="", failed_at=None)
            if self.on_applied is not None:
                self.on_applied(desired)
            log.info(
                "haproxy configuration applied started=%s reloads=%d seconds=%.3f",
                started,
                self.reloads,
                time.monotonic() - t0,
            )
            latest, latest_description = self._desired, self._desired_description
            # Changes that arrived during the check: on top, without another reload.
            if latest is not None and latest_description is not None and latest is not desired:
                if not await self._try_runtime(latest, latest_description) or self._urgent:
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
        first = next((ln.strip() for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
        self._note(failed=f"{reason}: {first[:300]}", failed_at=time.time())
        metrics.RELOAD_FAILURE.set(1)
        metrics.RELOAD_FAILURES.labels(reason=reason).inc()
        log.error(
            "haproxy configuration not applied; the last good one keeps serving reason=%s error=%s",
            reason,
            err,
        )

    async def _running_identity(self) -> str | None:
        """The identity HAProxy itself reports for the configuration it runs (None: unknown)."""
        try:
            return (await self.runtime.show_info()).get("description")
        except RuntimeAPIError:
            return None

    def _note(self, **changes: object) -> None:
        """Update ``run/loaded.json`` when something in it changed."""
        record = dataclasses.replace(self._record, **changes)
        if record == self._record:
            return
        self._record = record
        try:
            write_record(self.work_dir / "run", record)
        except OSError as err:
            log.warning("loaded record not written error=%s", err)

    async def check_files(self, files: dict[str, bytes]) -> ConfigCheckFailed | None:
        """``haproxy -c`` on a candidate file set in a scratch directory; None when it passes.

        Nothing live is touched. The directory is private (it holds route keys)
        and is emptied by :meth:`clear_scratch` once the caller is done.
        """
        self.scratch_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_file_set(self.scratch_dir, files)
        try:
            await self.process.check(self.scratch_dir / CONFIG_FILE)
        except ConfigCheckFailed as err:
            return err
        return None

    def clear_scratch(self) -> None:
        shutil.rmtree(self.scratch_dir, ignore_errors=True)


def _identity(files: Mapping[str, bytes]) -> str | None:
    """The identity the file set's ``haproxy.cfg`` names (see identity.py)."""
    return identity.declared(files.get(CONFIG_FILE, b""))
