"""``proxy/run/mode.json``: the mode a running proxy serves in, and where its rules live.

Why a record: ``shiftnet diagnose service`` checks the rules of the proxy that
actually runs, not a guess from whatever listener or ruleset text happens to
name the ClusterIP. The proxy writes, after its first sync: its mode, its
process (pid and start time, so a reused pid is not taken for it), the named
network namespace its kernel rules go to (``--netns``), the nftables table or
the iptables tools and chain it programs. A proxy started inside a namespace
(``nsenter``) is found through its pid's ``/proc/PID/ns/net``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from shiftnet.private_files import ensure_private_dir, write_private_file
from shiftnet.proxy import iptables_layout, nftables

RECORD_DIR = ("proxy", "run")  # under the state directory
RECORD_NAME = "mode.json"
NFT_FAMILY = "ip"


def record_path(state_dir: Path) -> Path:
    return Path(state_dir).joinpath(*RECORD_DIR, RECORD_NAME)


def process_start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/PID/stat`` (clock ticks since boot): with the pid, one process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # after "pid (comm)", which may hold spaces
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def mode_record(
    mode: str,
    netns: str | None,
    nft_table: str,
    iptables_backend: str | None,
) -> dict[str, Any]:
    """What ``diagnose`` needs to find this proxy's rules (see the module docstring)."""
    pid = os.getpid()
    record: dict[str, Any] = {
        "mode": mode,
        "pid": pid,
        "started": process_start_time(pid),
        "netns": netns if mode != "userspace" else None,
    }
    if mode == "nftables":
        record["nftables"] = {
            "family": NFT_FAMILY,
            "table": nft_table,
            "service_map": nftables.SERVICE_MAP,
            "no_endpoints_map": nftables.NO_ENDPOINTS_MAP,
            "endpoints_maps": dict(nftables.ENDPOINTS_MAPS),
            "map_suffixes": list(nftables.MAP_SUFFIXES),
        }
    elif mode == "iptables":
        record["iptables"] = {
            "backend": iptables_backend or "auto",
            "table": "nat",
            "services_chain": iptables_layout.SERVICES,
        }
    return record


def write_mode_record(state_dir: Path, record: dict[str, Any]) -> Path:
    path = record_path(state_dir)
    ensure_private_dir(path.parent)
    write_private_file(path, json.dumps(record, sort_keys=True))
    return path
