"""Pid files that survive an agent restart without trusting a recycled pid.

A pid alone is not an identity: after a reboot or a long time the kernel
hands the number to another process. Each record therefore also keeps the
process start time (field 22 of ``/proc/<pid>/stat``, in clock ticks since
boot); a process is "ours" only if both match.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)


def process_start_time(pid: int) -> int | None:
    """Start time of a live process in clock ticks since boot, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may contain spaces.
    rest = raw[raw.rfind(")") + 2 :].split()
    if len(rest) < 20 or rest[0] == "Z":  # zombies are as good as gone
        return None
    return int(rest[19])


def process_alive(pid: int, start_time: int) -> bool:
    return process_start_time(pid) == start_time


@dataclass
class ContainerRecord:
    """What the agent must remember about one running container process."""

    pod_uid: str
    namespace: str
    pod: str
    container: str
    pid: int
    start_time: int
    pod_ip: str
    restart_count: int
    started_at: str
    spec_hash: str

    @property
    def alive(self) -> bool:
        return process_alive(self.pid, self.start_time)


def write_record(path: Path, record: ContainerRecord) -> None:
    """Atomically replace ``path`` with ``record`` (no half-written pid file after a crash)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(record), sort_keys=True))
    os.replace(tmp, path)


def read_record(path: Path) -> ContainerRecord | None:
    try:
        data = json.loads(path.read_text())
        return ContainerRecord(**data)
    except (OSError, ValueError, TypeError) as err:
        log.warning("unreadable pid file path=%s error=%s", path, err)
        return None


def remove_record(path: Path) -> None:
    path.unlink(missing_ok=True)
