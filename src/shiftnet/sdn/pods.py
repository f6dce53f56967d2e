"""A pod on this node: its address, its container runners, and its status.

In local mode a pod "sandbox" is just an address on loopback plus a state
directory; the containers are processes that bind that address.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from shiftnet.api import Pod
from shiftnet.api.core import PodStatus
from shiftnet.errors import InvalidObject
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.container import ContainerRunner, PodContext, now_rfc3339
from shiftnet.sdn.pidfiles import ContainerRecord
from shiftnet.sdn.podfiles import pod_files
from shiftnet.sdn.podstatus import ContainerView, build_pod_status
from shiftnet.sdn.workdir import WORKDIR_ANNOTATION

log = logging.getLogger(__name__)


def spec_hash(pod: Pod) -> str:
    """Identity of what runs: a pod whose containers or restart policy change is restarted."""
    data = {
        "containers": [c.to_dict() for c in pod.spec.containers],
        "restartPolicy": pod.spec.restart_policy,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_UID = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9]{0,63}$")


def checked_part(value: str, what: str, pattern: re.Pattern[str] = _NAME) -> str:
    """A name that becomes a file name: the one check before it touches the disk.

    The API validates names on write, but the store may hold objects written
    by other means; nothing with ``/``, ``..`` or odd characters may become a path.
    """
    if not pattern.match(value) or ".." in value:
        raise InvalidObject("Pod", value, what, f'"{value}" cannot be used as a file name')
    return value


def pod_dir_name(namespace: str, name: str) -> str:
    """Directory name of a pod's logs; '_' never appears in namespace or pod names."""
    return f"{checked_part(namespace, 'metadata.namespace')}_{checked_part(name, 'metadata.name')}"


def log_dir(node_dir: Path, namespace: str, name: str) -> Path:
    """Logs are per name, so they outlive a pod re-created under the same name."""
    return node_dir / "logs" / pod_dir_name(namespace, name)


def run_dir(node_dir: Path, uid: str) -> Path:
    """Pid files are per uid: an old and a new pod of one name never share them."""
    return node_dir / "pods" / checked_part(uid, "metadata.uid", _UID)


def working_dir(pod: Pod, container_workdir: str | None, fallback: Path) -> str:
    """Where commands start: the container's workingDir, relative paths resolved
    against the pod's workdir annotation; else the annotation; else ``fallback``."""
    base_text = pod.metadata.annotations.get(WORKDIR_ANNOTATION)
    base = Path(base_text) if base_text and Path(base_text).is_absolute() else fallback
    if container_workdir:
        wd = Path(container_workdir)
        return str(wd if wd.is_absolute() else base / wd)
    return str(base)


def last_readiness(pod: Pod) -> dict[str, bool]:
    """Each container's readiness as the store last reported it: what an adopted
    process keeps until its probes say otherwise. Empty unless the pod was Running
    (a pod its agent stopped is Pending), so nothing is assumed about it."""
    if pod.status.phase != "Running":
        return {}
    return {cs.name: cs.ready for cs in pod.status.container_statuses}


def _ready_transition(pod: Pod) -> str | None:
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    return ready.last_transition_time if ready is not None else None


def _bound(
    command: Callable[[str, str, list[str]], list[str]] | None, namespace: str, name: str
) -> Callable[[list[str]], list[str]] | None:
    if command is None:
        return None
    return lambda argv: command(namespace, name, argv)


class PodRunner:
    def __init__(
        self,
        pod: Pod,
        pod_ip: str,
        config: NodeConfig,
        on_change: Callable[[], None],
        adopt: dict[str, ContainerRecord] | None = None,
        command: Callable[[str, str, list[str]], list[str]] | None = None,
        events: EventSink = DISCARD,
    ) -> None:
        """``command(namespace, name, argv)`` wraps each process so it runs in the pod's
        network (the network mode's :meth:`~shiftnet.sdn.local.PodNetwork.command`)."""
        self.namespace = pod.metadata.namespace or "default"
        self.name = pod.metadata.name
        self.uid = pod.metadata.uid or ""
        self.pod_ip = pod_ip
        self.host_ip = config.host_ip
        self.spec_hash = spec_hash(pod)
        self.grace = float(pod.spec.termination_grace_period_seconds)
        self.start_time = (
            pod.status.start_time
            if pod.status.pod_ip == pod_ip and pod.status.start_time
            else now_rfc3339()
        )
        self.pod_dir = run_dir(config.node_dir, self.uid)
        self.pod_dir.mkdir(parents=True, exist_ok=True)
        adopt = adopt or {}
        hints = last_readiness(pod) if adopt and pod.status.pod_ip == pod_ip else {}
        self._ready = bool(hints) and all(hints.get(c.name, False) for c in pod.spec.containers)
        self._ready_since = (_ready_transition(pod) if hints else None) or self.start_time
        self._on_change = on_change
        files = pod_files(pod, pod_ip, config, self.pod_dir)
        self.etc_files = files.texts  # also put where ``ip netns exec`` finds them (sdn mode)
        self.containers: list[ContainerRunner] = []
        for c in pod.spec.containers:
            checked_part(c.name, "spec.containers[].name")
            ctx = PodContext(
                namespace=self.namespace,
                name=self.name,
                uid=self.uid,
                pod_ip=pod_ip,
                host_ip=config.host_ip,
                node_name=config.node_name,
                restart_policy=pod.spec.restart_policy,
                cwd=working_dir(pod, c.working_dir, self.pod_dir),
                pod_dir=self.pod_dir,
                log_dir=log_dir(config.node_dir, self.namespace, self.name),
                spec_hash=self.spec_hash,
                grace=self.grace,
                backoff_initial=config.backoff_initial,
                backoff_max=config.backoff_max,
                backoff_reset=config.backoff_reset,
                extra_env=files.env,
                command=_bound(command, self.namespace, self.name),
                etc=files.wrap,
                events=events,
            )
            record = adopt.get(c.name)
            self.containers.append(
                ContainerRunner(ctx, c, self._changed, record, ready_hint=hints.get(c.name, False))
            )

    def _changed(self) -> None:
        ready = all(c.ready for c in self.containers) and bool(self.containers)
        if ready != self._ready:
            self._ready = ready
            self._ready_since = now_rfc3339()
        self._on_change()

    def start(self) -> None:
        log.info("starting pod pod=%s/%s ip=%s", self.namespace, self.name, self.pod_ip)
        for c in self.containers:
            c.start()

    async def stop(self, kill: bool = True) -> None:
        await asyncio.gather(*(c.stop(self.grace, kill=kill) for c in self.containers))
        if kill:
            shutil.rmtree(self.pod_dir, ignore_errors=True)
            log.info("stopped pod pod=%s/%s", self.namespace, self.name)

    def status(self) -> PodStatus:
        views = [
            ContainerView(
                status=c.status(),
                started_once=c.started_once,
                finished=c.finished,
                exit_code=c.exit_code,
            )
            for c in self.containers
        ]
        return build_pod_status(
            views,
            pod_ip=self.pod_ip,
            host_ip=self.host_ip,
            start_time=self.start_time,
            ready_since=self._ready_since,
        )

    def pids(self) -> list[int]:
        return [
            c.process.pid
            for c in self.containers
            if c.process is not None and c.process.exit_code is None
        ]
