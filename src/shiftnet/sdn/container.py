"""One container of a pod: start, watch, probe, restart by policy, stop.

The runner owns the process lifecycle; it reports changes through a plain
callback so the agent can coalesce status writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import logging
import os
import shutil
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shiftnet.api import Container
from shiftnet.api.core import ContainerStatus, ObjectReference
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.sdn import metrics
from shiftnet.sdn.environment import container_argv, container_env
from shiftnet.sdn.pidfiles import ContainerRecord, remove_record, write_record
from shiftnet.sdn.probes import ProbeTracker, run_probe
from shiftnet.sdn.process import UNKNOWN_EXIT, PodProcess

log = logging.getLogger(__name__)

START_ERROR_EXIT = 128


def now_rfc3339() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds_since(rfc3339: str) -> float:
    """Age of a ``startedAt`` stamp; 0 when it cannot be read."""
    try:
        then = _dt.datetime.strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    except ValueError:
        return 0.0
    return max((_dt.datetime.now(_dt.UTC) - then).total_seconds(), 0.0)


def should_restart(policy: str, exit_code: int) -> bool:
    """restartPolicy: Always restarts every exit, OnFailure non-zero exits, Never none."""
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return exit_code != 0
    return False


def backoff_delay(failures: int, initial: float, maximum: float) -> float:
    """Crash-loop delay before restart number ``failures`` (1-based) of quick exits."""
    if failures <= 0:
        return 0.0
    return float(min(maximum, initial * (2 ** (failures - 1))))


@dataclass
class PodContext:
    """What every container of one pod shares."""

    namespace: str
    name: str
    uid: str
    pod_ip: str
    host_ip: str
    node_name: str
    restart_policy: str
    cwd: str
    pod_dir: Path  # pid files
    log_dir: Path  # <container>.log
    spec_hash: str
    grace: float  # terminationGracePeriodSeconds
    backoff_initial: float
    backoff_max: float
    backoff_reset: float
    extra_env: Mapping[str, str] = field(default_factory=dict)  # e.g. the DNS search path
    # wraps argv so it runs inside the pod's network (sdn: ``ip netns exec``); None: as is
    command: Callable[[list[str]], list[str]] | None = None
    # wraps argv so it sees the pod's resolv.conf, hosts and hostname (sdn/podetc.py)
    etc: Callable[[list[str]], list[str]] | None = None
    events: EventSink = DISCARD  # the node agent's recorder (BackOff, Unhealthy, ...)

    def container_ref(self, container: str) -> ObjectReference:
        """The pod as an event's ``involvedObject``, pointing at one container."""
        return ObjectReference(
            kind="Pod",
            api_version="v1",
            namespace=self.namespace,
            name=self.name,
            uid=self.uid or None,
            field_path=f"spec.containers{{{container}}}",
        )

    def wrap(self, argv: list[str]) -> list[str]:
        if argv and self.etc is not None:
            argv = self.etc(argv)
        return self.command(argv) if self.command is not None and argv else argv


def findable(program: str, env: Mapping[str, str], cwd: str) -> bool:
    """Would exec find ``program``? A wrapped command that cannot be started must still
    fail at spawn (reason StartError), not later inside the wrapper."""
    if "/" in program:
        path = os.path.join(cwd, program)
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return shutil.which(program, path=env.get("PATH", os.defpath)) is not None


class ContainerRunner:
    def __init__(
        self,
        ctx: PodContext,
        container: Container,
        on_change: Callable[[], None],
        adopt: ContainerRecord | None = None,
        ready_hint: bool = False,
    ) -> None:
        """``ready_hint`` is the readiness the store last reported for this container: an
        adopted process keeps it until its probes say otherwise (a restarted agent must
        not take a serving pod out of its Services)."""
        self.ctx = ctx
        self.container = container
        self.name = container.name
        self._on_change = on_change
        self._adopt = adopt
        self._ready_hint = ready_hint
        self._age_at_adoption = 0.0  # seconds the adopted process ran before this agent
        self.restart_count = adopt.restart_count if adopt else 0
        self.ready = False
        self.started_once = adopt is not None
        self.finished = False  # exited and will not be restarted
        self.exit_code: int | None = None
        self.state: dict[str, dict[str, str | int]] = {"waiting": {"reason": "ContainerCreating"}}
        self.process: PodProcess | None = None
        self._task: asyncio.Task[None] | None = None
        self._probe_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._quick_failures = 0
        self.env = container_env(
            container,
            namespace=ctx.namespace,
            pod_name=ctx.name,
            pod_ip=ctx.pod_ip,
            host_ip=ctx.host_ip,
            node_name=ctx.node_name,
            host_env=os.environ,
            extra=ctx.extra_env,
        )
        self.argv = container_argv(container, self.env)

    # ------------------------------------------------------------ paths
    @property
    def pid_path(self) -> Path:
        return self.ctx.pod_dir / f"{self.name}.pid"

    @property
    def log_path(self) -> Path:
        return self.ctx.log_dir / f"{self.name}.log"

    # ------------------------------------------------------------ status
    def status(self) -> ContainerStatus:
        return ContainerStatus(
            name=self.name,
            ready=self.ready,
            restart_count=self.restart_count,
            started=self.process is not None and self.exit_code is None,
            state=self.state,
        )

    @property
    def running(self) -> bool:
        return "running" in self.state

    def _changed(self) -> None:
        try:
            self._on_change()
        except Exception:  # a status callback must never kill the container loop
            log.exception("status callback failed pod=%s/%s", self.ctx.namespace, self.ctx.name)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        # Adopt now, not in the task: the status written right after start() must
        # already show the adopted process running (and ready, when it was).
        adopted = self._take_adopted()
        self._task = asyncio.get_running_loop().create_task(
            self._run(adopted), name=f"container {self.ctx.namespace}/{self.ctx.name}/{self.name}"
        )

    async def stop(self, grace: float, kill: bool = True) -> None:
        """Stop the loop; with ``kill`` also terminate the process (SIGTERM, then SIGKILL)."""
        self._stopping = True
        await self._cancel_probe()
        proc = self.process
        if kill and proc is not None and proc.exit_code is None:
            log.info(
                "stopping container pod=%s/%s container=%s pid=%d grace=%s",
                self.ctx.namespace,
                self.ctx.name,
                self.name,
                proc.pid,
                grace,
            )
            await proc.terminate(grace)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if kill:
            remove_record(self.pid_path)

    async def _run(self, adopted: PodProcess | None) -> None:
        while not self._stopping:
            proc, adopted = adopted or self._spawn(), None
            if proc is None:
                code = START_ERROR_EXIT
                ran_for = 0.0
            else:
                started = asyncio.get_running_loop().time()
                self._probe_task = asyncio.get_running_loop().create_task(self._probe_loop())
                code = await proc.wait()
                ran_for = asyncio.get_running_loop().time() - started
                if self._stopping:
                    return
                await self._cancel_probe()
                proc.signal_group(signal.SIGKILL)  # children of a dead main process
                remove_record(self.pid_path)
                self.ready = False
                self._age_at_adoption = 0.0  # the next process starts its own delays
                self.exit_code = code
                reason = "Completed" if code == 0 else "Error"
                self.state = {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Unknown" if code == UNKNOWN_EXIT and proc.adopted else reason,
                        "startedAt": self.state.get("running", {}).get("startedAt", ""),
                        "finishedAt": now_rfc3339(),
                    }
                }
                metrics.CONTAINER_EXITS.labels(self.state["terminated"]["reason"]).inc()
                log.info(
                    "container exited pod=%s/%s container=%s exit_code=%d ran_for=%.1fs",
                    self.ctx.namespace,
                    self.ctx.name,
                    self.name,
                    code,
                    ran_for,
                )
            self._changed()
            if not should_restart(self.ctx.restart_policy, code):
                self.finished = True
                self._changed()
                return
            self._quick_failures = (
                0 if ran_for >= self.ctx.backoff_reset else self._quick_failures + 1
            )
            delay = backoff_delay(
                self._quick_failures, self.ctx.backoff_initial, self.ctx.backoff_max
            )
            if delay > 0:
                self.state = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off {delay:g}s restarting failed container={self.name} "
                        f"pod={self.ctx.name}",
                    }
                }
                self._changed()
                self._event(
                    "Warning", "BackOff", f"Back-off restarting failed container {self.name}"
                )
                await asyncio.sleep(delay)
            self.restart_count += 1
            self.exit_code = None

    def _take_adopted(self) -> PodProcess | None:
        rec, self._adopt = self._adopt, None
        if rec is None:
            return None
        proc = PodProcess.adopt(rec.pid, rec.start_time)
        if proc is None:
            self.restart_count += 1  # it died while no agent watched: this start is a restart
            return None
        log.info(
            "adopted container pod=%s/%s container=%s pid=%d",
            self.ctx.namespace,
            self.ctx.name,
            self.name,
            rec.pid,
        )
        self.process = proc
        self.state = {"running": {"startedAt": rec.started_at}}
        self.ready = self._ready_hint
        self._age_at_adoption = _seconds_since(rec.started_at)
        self._changed()
        return proc

    def _event(self, type_: str, reason: str, message: str) -> None:
        self.ctx.events.record(self.ctx.container_ref(self.name), type_, reason, message)

    def _spawn(self) -> PodProcess | None:
        if not self.argv:
            self.state = {
                "waiting": {
                    "reason": "CreateContainerConfigError",
                    "message": f'container "{self.name}" has no command: local mode runs '
                    "commands, not images",
                }
            }
            self.exit_code = START_ERROR_EXIT
            return None
        argv = (
            self.ctx.wrap(self.argv)
            if findable(self.argv[0], self.env, self.ctx.cwd)
            else self.argv  # fails here with the real reason
        )
        try:
            proc = PodProcess.spawn(argv, self.env, self.ctx.cwd, self.log_path)
        except OSError as err:
            message = f"cannot start {self.argv[0]!r}: {err.strerror or err}"
            log.warning(
                "container start failed pod=%s/%s container=%s error=%s",
                self.ctx.namespace,
                self.ctx.name,
                self.name,
                message,
            )
            with contextlib.suppress(OSError), open(self.log_path, "a") as f:
                f.write(f"shiftnet: {message}\n")
            self.exit_code = START_ERROR_EXIT
            metrics.CONTAINER_EXITS.labels("StartError").inc()
            self.state = {
                "terminated": {
                    "exitCode": START_ERROR_EXIT,
                    "reason": "StartError",
                    "message": message,
                }
            }
            return None
        started_at = now_rfc3339()
        metrics.CONTAINER_STARTS.inc()
        self.process = proc
        self.started_once = True
        self.state = {"running": {"startedAt": started_at}}
        write_record(
            self.pid_path,
            ContainerRecord(
                pod_uid=self.ctx.uid,
                namespace=self.ctx.namespace,
                pod=self.ctx.name,
                container=self.name,
                pid=proc.pid,
                start_time=proc.start_time,
                pod_ip=self.ctx.pod_ip,
                restart_count=self.restart_count,
                started_at=started_at,
                spec_hash=self.ctx.spec_hash,
            ),
        )
        log.info(
            "container started pod=%s/%s container=%s pid=%d ip=%s",
            self.ctx.namespace,
            self.ctx.name,
            self.name,
            proc.pid,
            self.ctx.pod_ip,
        )
        self._changed()
        self._event("Normal", "Started", f"Started container {self.name}")
        return proc

    # ------------------------------------------------------------ readiness
    def _initial_delay(self, seconds: int) -> float:
        """initialDelaySeconds counts from the container's start, which for an adopted
        process was before this agent."""
        return max(float(seconds) - self._age_at_adoption, 0.0)

    async def _cancel_probe(self) -> None:
        task, self._probe_task = self._probe_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _probe_loop(self) -> None:
        await asyncio.gather(self._readiness_loop(), self._liveness_loop())

    async def _liveness_loop(self) -> None:
        """A container failing ``failureThreshold`` liveness probes in a row is stopped
        (SIGTERM, SIGKILL after the grace period) and restarted by its policy."""
        probe = self.container.liveness_probe
        proc = self.process
        if probe is None or proc is None:
            return
        failures = 0
        threshold = max(probe.failure_threshold, 1)
        await asyncio.sleep(self._initial_delay(probe.initial_delay_seconds))
        period = float(max(probe.period_seconds, 1))
        while True:
            result = await run_probe(
                probe, self.container, self.ctx.pod_ip, self.env, self.ctx.cwd, self.ctx.wrap
            )
            failures = 0 if result.ok else failures + 1
            if not result.ok:
                self._event("Warning", "Unhealthy", f"Liveness probe failed: {result.message}")
            if failures >= threshold:
                log.warning(
                    "liveness probe failed, restarting pod=%s/%s container=%s message=%s",
                    self.ctx.namespace,
                    self.ctx.name,
                    self.name,
                    result.message,
                )
                metrics.LIVENESS_KILLS.inc()
                msg = f"Container {self.name} failed liveness probe, will be restarted"
                self._event("Normal", "Killing", msg)
                await proc.terminate(self.ctx.grace)
                return
            await asyncio.sleep(period)

    async def _readiness_loop(self) -> None:
        probe = self.container.readiness_probe
        if probe is None:
            self.ready = True
            self._changed()
            return
        tracker = ProbeTracker(probe, ready=self.ready)  # True only for an adopted ready one
        kind = metrics.probe_kind(
            probe.tcp_socket is not None, probe.http_get is not None, probe.exec_ is not None
        )
        await asyncio.sleep(self._initial_delay(probe.initial_delay_seconds))
        period = float(max(probe.period_seconds, 1))
        while True:
            result = await run_probe(
                probe, self.container, self.ctx.pod_ip, self.env, self.ctx.cwd, self.ctx.wrap
            )
            metrics.PROBES.labels(kind, "success" if result.ok else "failure").inc()
            if not result.ok:
                self._event("Warning", "Unhealthy", f"Readiness probe failed: {result.message}")
            if tracker.record(result):
                self.ready = tracker.ready
                log.info(
                    "readiness changed pod=%s/%s container=%s ready=%s message=%s",
                    self.ctx.namespace,
                    self.ctx.name,
                    self.name,
                    self.ready,
                    result.message,
                )
                self._changed()
            await asyncio.sleep(period)
