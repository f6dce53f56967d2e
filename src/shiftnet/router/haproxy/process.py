"""Run one real HAProxy in master-worker mode, and keep it running.

Why master-worker (``-W -D -S <master socket> -p <pid file>``): a reload is a
SIGUSR2 to the master, which re-executes itself on the same configuration path
and hands the listening sockets of the old worker to the new one, so no
connection is refused during a reload; old workers finish their connections
and are bounded by ``hard-stop-after``. HAProxy daemonizes into its own
session, so it outlives the router: a router that crashes leaves traffic
flowing, and a restarted router finds the master through the pid file and the
master socket and adopts it instead of starting a second one. Only a clean
``stop()`` stops HAProxy. The socket directory carries an owner record
(``socket_dirs.py``): a router's start removes the directories, and stops the
HAProxies, that killed routers left where no router can ever adopt them.

Every configuration is checked with ``haproxy -c`` before it is used; a
configuration that fails the check, or a reload the master reports as failed,
raises a typed error while the previous worker keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import resource
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from shiftnet.errors import ShiftnetError
from shiftnet.router import metrics
from shiftnet.router.haproxy import limits as limits_math
from shiftnet.router.haproxy.held_ports import listening_ports, process_tree
from shiftnet.router.haproxy.names import CONFIG_FILE
from shiftnet.router.haproxy.socket_dirs import SocketDirClaim, Sweep, claim, owner_dir, sweep_stale
from shiftnet.router.haproxy.socket_dirs import socket_dir as socket_dir  # re-exported

log = logging.getLogger(__name__)

HAPROXY_BINARY = "/usr/sbin/haproxy"


# Descriptors beyond two per connection; the arithmetic, and the counting of
# checked servers after rendering, live in ``limits`` (pure).
FD_RESERVE_MIN = limits_math.FD_RESERVE_MIN


class HAProxyError(ShiftnetError):
    """HAProxy could not be started, reloaded or reached."""


class ConfigCheckFailed(HAProxyError):
    """``haproxy -c`` refused a configuration; the running one stays in place."""

    def __init__(self, path: Path, output: str) -> None:
        self.path = path
        self.output = output
        first = _first_alert(output)
        super().__init__(f"HAProxy configuration {path} is invalid: {first}")


class PortsHeldError(HAProxyError):
    """A killed router's HAProxy, kept for adoption, serves the ports this one needs."""


class ReloadFailed(HAProxyError):
    """The master could not load the new configuration; the old worker keeps serving."""


def _first_alert(output: str) -> str:
    for line in output.splitlines():
        if "[ALERT]" in line:
            return line.split(":", 2)[-1].strip()
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return lines[0] if lines else "haproxy -c failed without output"


@dataclass(frozen=True)
class ProcessLimits:
    """What this machine lets HAProxy use: connections by descriptors, threads by CPUs."""

    maxconn: int
    nbthread: int
    nofile: int
    requested_maxconn: int

    @property
    def capped(self) -> bool:
        return self.maxconn < self.requested_maxconn


def fit_limits(
    requested_maxconn: int, nofile: int | None = None, cpus: int | None = None
) -> ProcessLimits:
    """Size ``maxconn`` so HAProxy can raise its descriptor limit, and threads to the CPUs.

    HAProxy needs about two descriptors per connection plus a reserve; when it
    would need more than the hard ``RLIMIT_NOFILE`` it refuses to start (its
    ``strict-limits`` default), which is how OpenShift's default of 50,000
    connections fails on a machine limited to 20,000 descriptors.
    """
    if nofile is None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        nofile = hard if hard != resource.RLIM_INFINITY else soft
        if nofile == resource.RLIM_INFINITY:
            nofile = 1 << 20
    # Beyond two per connection HAProxy counts descriptors for listeners and the
    # internal TLS hop; the renderer lowers maxconn further for checked servers
    # (``limits.fit_maxconn`` on the rendered configuration).
    allowed = max(1, (nofile - limits_math.reserve(nofile)) // 2)
    if cpus is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
    nbthread = max(1, min(cpus, 64))
    return ProcessLimits(
        maxconn=min(requested_maxconn, allowed),
        nbthread=nbthread,
        nofile=nofile,
        requested_maxconn=requested_maxconn,
    )


_limits_logged = False


def log_limits_once(limits: ProcessLimits) -> None:
    """Say once per router process how ``maxconn`` was sized, and why."""
    global _limits_logged
    if _limits_logged:
        return
    _limits_logged = True
    if limits.capped:
        log.warning(
            "haproxy maxconn lowered to fit the file descriptor limit: requested=%d maxconn=%d "
            "nofile=%d nbthread=%d",
            limits.requested_maxconn,
            limits.maxconn,
            limits.nofile,
            limits.nbthread,
        )
    else:
        log.info(
            "haproxy limits maxconn=%d nofile=%d nbthread=%d",
            limits.maxconn,
            limits.nofile,
            limits.nbthread,
        )


_fits_logged: set[tuple[int, bool]] = set()


def log_maxconn_fit(fit: limits_math.MaxconnFit | None) -> None:
    """Say once, not per reload, when checked servers lower ``maxconn`` further.

    ``fit_maxconn`` moves only in steps of checked servers; each value it
    takes (and ``no strict-limits``, when the checks alone do not fit) is said once.
    """
    if fit is None or fit.nofile <= 0 or (fit.maxconn, fit.strict) in _fits_logged:
        return
    _fits_logged.add((fit.maxconn, fit.strict))
    if not fit.lowered:
        return  # log_limits_once already said what maxconn is
    if not fit.strict:
        log.warning(
            "haproxy health checks exceed the file descriptor limit: checked_servers=%d "
            "nofile=%d maxconn=%d strict_limits=off (only checks in flight hold descriptors)",
            fit.checked,
            fit.nofile,
            fit.maxconn,
        )
    else:
        log.warning(
            "haproxy maxconn fitted to the checked servers: requested=%d maxconn=%d "
            "checked_servers=%d nofile=%d",
            fit.requested,
            fit.maxconn,
            fit.checked,
            fit.nofile,
        )


def _pid_alive(pid: int) -> bool:
    """The pid exists and is not a zombie (its command line may be mid-exec)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


@dataclass(frozen=True)
class MasterStatus:
    """The master's view from ``show proc``."""

    master_pid: int
    reloads: int
    failed: int
    workers: tuple[int, ...]
    old_workers: tuple[int, ...]


_MASTER_RE = re.compile(r"^(\d+)\s+master\s+(\d+)\s+\[failed:\s*(\d+)\]")
_WORKER_RE = re.compile(r"^(\d+)\s+worker\s")


def parse_show_proc(text: str) -> MasterStatus:
    """Parse the master CLI's ``show proc`` table (HAProxy 2.6 layout)."""
    master_pid = reloads = failed = -1
    workers: list[int] = []
    old: list[int] = []
    section = "master"
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# workers"):
            section = "workers"
            continue
        if line.startswith("# old workers"):
            section = "old"
            continue
        if line.startswith("# programs"):
            section = "programs"
            continue
        m = _MASTER_RE.match(line)
        if m:
            master_pid, reloads, failed = int(m[1]), int(m[2]), int(m[3])
            continue
        w = _WORKER_RE.match(line)
        if w:
            (workers if section == "workers" else old).append(int(w[1]))
    if master_pid < 0:
        raise HAProxyError(f"unexpected answer from the HAProxy master socket: {text[:200]!r}")
    return MasterStatus(master_pid, reloads, failed, tuple(workers), tuple(old))


async def unix_command(path: Path, command: str, timeout: float = 5.0) -> str:
    """Send one command line to a HAProxy CLI socket and return its whole answer."""

    async def run() -> str:
        reader, writer = await asyncio.open_unix_connection(str(path))
        try:
            writer.write(command.encode() + b"\n")
            await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
            data = await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()
        return data.decode(errors="replace")

    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that races
    # with the answer, and the runner that owns this call then never stops.
    async with asyncio.timeout(timeout):
        return await run()


class HAProxyProcess:
    """One HAProxy master (and its workers) serving ``<work_dir>/conf/haproxy.cfg``.

    Layout of ``work_dir``: ``conf/`` the live file set, ``run/haproxy.pid``
    the master's pid, ``run/master.sock`` the master CLI.
    """

    def __init__(
        self,
        work_dir: Path,
        binary: str = HAPROXY_BINARY,
        restart_backoff: float = 1.0,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.conf_dir = self.work_dir / "conf"
        self.run_dir = socket_dir(self.work_dir)
        self.config_path = self.conf_dir / CONFIG_FILE
        self.pid_file = self.run_dir / "haproxy.pid"
        self.master_socket = self.run_dir / "master.sock"
        self.binary = binary
        self.restart_backoff = restart_backoff
        self.restarts = 0
        self.adopted = False
        self.wanted = False  # set once started or adopted; restart_if_dead() acts only then
        self._lock = asyncio.Lock()
        self._claim: SocketDirClaim | None = None
        # HAProxies of killed routers left for their own work dirs' routers to adopt
        self.left_by_others: tuple[tuple[int, Path], ...] = ()
        self.listen_ports: tuple[int, ...] = ()  # what the configuration binds (the router's)

    # ----------------------------------------------------------------- checks
    async def check(self, config_path: Path) -> None:
        """Run ``haproxy -c`` on a configuration; raise :class:`ConfigCheckFailed`."""
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            "-c",
            "-f",
            str(config_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=str(Path(config_path).parent),
        )
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise ConfigCheckFailed(config_path, out.decode(errors="replace"))

    # ------------------------------------------------------------ inspection
    def read_pid(self) -> int | None:
        try:
            text = self.pid_file.read_text().split()
        except OSError:
            return None
        try:
            return int(text[0]) if text else None
        except ValueError:
            return None

    def _is_our_master(self, pid: int) -> bool:
        """The pid is a live (not zombie) haproxy started on our configuration."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        state = stat.rsplit(")", 1)[-1].split()[0]
        if state in ("Z", "X"):
            return False
        return b"haproxy" in cmdline and str(self.master_socket).encode() in cmdline

    def alive(self) -> bool:
        pid = self.read_pid()
        return pid is not None and self._is_our_master(pid)

    async def status(self) -> MasterStatus:
        return parse_show_proc(await unix_command(self.master_socket, "show proc"))

    async def wait_status(self, timeout: float) -> MasterStatus:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                st = await self.status()
                if st.workers:
                    return st
            except (TimeoutError, OSError, HAProxyError) as err:
                last = err
            await asyncio.sleep(0.02)
        raise HAProxyError(f"HAProxy master at {self.master_socket} did not answer: {last!r}")

    # ------------------------------------------------------------- lifecycle
    def claim_run_dir(self) -> Sweep:
        """Own the socket directory (owner record, held while this router runs), and clean
        up the directories and HAProxies of killed routers that nobody can adopt."""
        if self._claim is None or not self._claim.held:
            self._claim = claim(self.work_dir, self.run_dir)
        swept = sweep_stale(keep=owner_dir(self.work_dir))
        self.left_by_others = swept.kept
        if swept.removed:
            log.info(
                "stale socket dirs removed count=%d haproxy_stopped=%s",
                len(swept.removed),
                list(swept.stopped),
            )
        return swept

    def _refuse_ports_held_by_leftovers(self) -> None:
        """Refuse to start beside a killed router's HAProxy that serves our ports.

        HAProxy binds with ``SO_REUSEPORT``: both would start, and the kernel would
        split connections between this configuration and the left one's.
        """
        wanted = {port for port in self.listen_ports if port > 0}
        for pid, work_dir in self.left_by_others:
            held = sorted(wanted & listening_ports(process_tree(pid)))
            if held:
                ports = ", ".join(str(port) for port in held)
                which = f"ports {ports} are" if len(held) > 1 else f"port {ports} is"
                raise PortsHeldError(
                    f"{which} served by HAProxy (pid {pid}) left running by a "
                    f"router that was killed, with work dir {work_dir}: start the router "
                    f"on that state directory again to adopt it, or stop it with "
                    f"`kill {pid}`"
                )

    def release_run_dir(self) -> None:
        """Let go of the socket directory (a HAProxy left running stays adoptable)."""
        if self._claim is not None:
            self._claim.release()
            self._claim = None

    async def adopt(self) -> bool:
        """Take over a HAProxy left running by an earlier router; True when adopted."""
        pid = self.read_pid()
        if pid is None or not self._is_our_master(pid):
            return False
        try:
            st = await self.wait_status(timeout=2.0)
        except HAProxyError:
            return False
        self.adopted = True
        self.wanted = True
        if self._claim is not None:
            self._claim.record_master(st.master_pid)
        log.info("haproxy adopted master_pid=%d workers=%s", st.master_pid, list(st.workers))
        return True

    async def start(self) -> None:
        """Start a new master on the live configuration (which must already be checked)."""
        async with self._lock:
            await self._start_locked()

    async def _start_locked(self) -> None:
        restart = self.wanted  # it was running (started or adopted) and is gone
        self._refuse_ports_held_by_leftovers()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.master_socket.unlink()
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            "-W",
            "-D",
            "-S",
            f"{self.master_socket},mode,600",
            "-p",
            str(self.pid_file),
            "-f",
            str(self.config_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            cwd=str(self.conf_dir),
        )
        # With -D the launching process exits once the master is daemonized;
        # its output is whatever HAProxy had to say while starting.
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise HAProxyError(
                f"HAProxy failed to start: {_first_alert(out.decode(errors='replace'))}"
            )
        st = await self.wait_status(timeout=10.0)
        self.adopted = False
        self.wanted = True
        if self._claim is not None:
            self._claim.record_master(st.master_pid)
        if restart:
            self.restarts += 1
            metrics.HAPROXY_RESTARTS.inc()
        log.info("haproxy started master_pid=%d workers=%s", st.master_pid, list(st.workers))

    async def ensure_running(self) -> bool:
        """Adopt a running master or start one; True when one had to be started."""
        async with self._lock:
            if self.alive():
                try:
                    await self.wait_status(timeout=2.0)
                    return False
                except HAProxyError:
                    log.warning("haproxy master does not answer; restarting it")
                    self._kill_pid(signal.SIGKILL)
            await self._start_locked()
            return True

    async def reload(self, timeout: float = 15.0) -> MasterStatus:
        """Reload the master on the live configuration, seamlessly.

        Raises :class:`ReloadFailed` when the master reports a failed reload;
        the previous worker then keeps serving the previous configuration.
        """
        async with self._lock:
            before = await self.wait_status(timeout=5.0)
            os.kill(before.master_pid, signal.SIGUSR2)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                await asyncio.sleep(0.01)
                if not _pid_alive(before.master_pid):
                    raise HAProxyError("HAProxy's master died during a reload")
                try:
                    st = await self.status()
                except (TimeoutError, OSError, HAProxyError):
                    continue  # the master is re-executing itself
                if st.reloads <= before.reloads:
                    continue
                if st.failed > before.failed:
                    raise ReloadFailed(
                        "HAProxy refused the new configuration; the previous one keeps serving"
                    )
                new_workers = set(st.workers) - set(before.workers)
                if new_workers:
                    return st
            raise ReloadFailed(f"HAProxy did not finish reloading within {timeout:.0f}s")

    def _kill_pid(self, sig: signal.Signals) -> None:
        pid = self.read_pid()
        if pid is not None and self._is_our_master(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop the master and its workers (clean router shutdown only)."""
        async with self._lock:
            self.wanted = False
            pid = self.read_pid()
            if pid is not None and self._is_our_master(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and self._is_our_master(pid):
                    await asyncio.sleep(0.02)
                if self._is_our_master(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                log.info("haproxy stopped master_pid=%d", pid)
            with contextlib.suppress(FileNotFoundError):
                self.pid_file.unlink()
            if self._claim is not None:
                self._claim.remove()  # the owner record's directory (sockets too, when short)
                self._claim = None
            elif self.run_dir != self.work_dir.resolve() / "run":
                # a short socket directory outside the work dir: nothing else cleans it up
                shutil.rmtree(self.run_dir, ignore_errors=True)

    async def restart_if_dead(self) -> None:
        """Restart HAProxy when its master is gone (the driver's watch task calls it)."""
        if not self.wanted or self.alive():
            return
        log.error("haproxy is not running; restarting it config=%s", self.config_path)
        try:
            async with self._lock:
                if self.wanted and not self.alive():
                    await self._start_locked()
        except HAProxyError as err:
            log.error("haproxy restart failed error=%s", err)
            await asyncio.sleep(self.restart_backoff)
