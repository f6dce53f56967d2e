"""What one router running from this state directory serves, read from its sources.

Why each source: ``run/backends.json`` and ``run/aliases.json`` are the
router's own record of which backend serves which route (``describe route``
reads them too), ``run/listeners.json`` its record of the addresses HAProxy
listens on, ``run/shard.json`` its ``ROUTE_LABELS`` and ``NAMESPACE_LABELS``;
the map files in ``conf/`` are what it rendered; HAProxy's
runtime API (``show map``, ``show servers state``) is what actually runs,
and ``show info`` names the configuration it loaded, which is compared with
the digest of ``conf/haproxy.cfg`` (``router/haproxy/identity.py``); the
pid file and master socket tell whether HAProxy runs at all; the driver's
``run/loaded.json`` which rendered file the runtime API serves on top of the
loaded one and the last refused reload, and its ``reload-owed`` marker since
when runtime changes wait for a reload.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from shiftnet.diagnose.listeners import listener_addresses
from shiftnet.diagnose.route_facts import RouterView, ServerView
from shiftnet.diagnose.route_lookup import lookup_text, map_lookup
from shiftnet.router.describe import BACKENDS_INDEX
from shiftnet.router.haproxy import identity
from shiftnet.router.haproxy.loaded import LoadedRecord, parse_record
from shiftnet.router.haproxy.names import (
    ADMIN_SOCKET,
    ALIASES_INDEX,
    CONFIG_FILE,
    HTTP_FRONTEND,
    HTTPS_FRONTEND,
    LISTENERS_RECORD,
    LOADED_RECORD,
    SHARD_RECORD,
)
from shiftnet.router.haproxy.process import HAProxyProcess, socket_dir
from shiftnet.router.haproxy.runtime import RuntimeAPI, RuntimeAPIError
from shiftnet.router.shard_record import parse_shard

log = logging.getLogger(__name__)

RELOAD_OWED_MARKER = "reload-owed"  # the driver's marker in the router's work directory
ROUTER_DIR_PREFIX = "router-"


def router_dirs(state_dir: Path) -> dict[str, Path]:
    """Router name -> work directory, for every router that rendered a configuration here."""
    out: dict[str, Path] = {}
    if not state_dir.is_dir():
        return out
    for path in sorted(state_dir.glob(ROUTER_DIR_PREFIX + "*")):
        if (path / "conf" / CONFIG_FILE).is_file():
            out[path.name[len(ROUTER_DIR_PREFIX) :]] = path
    return out


def _json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _map_file(path: Path) -> dict[str, str]:
    entries: dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        return entries
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and not line.startswith("#"):
            entries[parts[0]] = parts[1].strip()
    return entries


def _stopped(pid: int) -> bool:
    """The kernel's state of process ``pid`` is "stopped" (T): it runs nothing, not a reload."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()  # after "pid (comm)", which may hold spaces
    return bool(fields) and fields[0] == "T"


async def router_view(
    name: str, work: Path, route_key: str, map_name: str, host: str, path: str
) -> RouterView:
    """One router's view of one route and one request (``map_name``: the map it consults)."""
    conf = work / "conf"
    try:
        binds = listener_addresses((work / "run" / LISTENERS_RECORD).read_text())
    except OSError:
        binds = {}
    try:
        shard = parse_shard((work / "run" / SHARD_RECORD).read_text())
    except OSError:
        shard = None
    backends_index = _json(work / "run" / BACKENDS_INDEX)
    raw_backends = backends_index.get(route_key, [])
    backends = tuple(str(b) for b in raw_backends) if isinstance(raw_backends, list) else ()
    aliases = {str(k): str(v) for k, v in _json(work / "run" / ALIASES_INDEX).items()}
    rendered = map_lookup(map_name, _map_file(conf / map_name), host, path)
    process = HAProxyProcess(work)
    master_running = process.alive()
    master_pid = process.read_pid() if master_running else None
    api = RuntimeAPI(socket_dir(work) / ADMIN_SOCKET, timeout=3.0)
    running: str | None = None
    running_config: str | None = None
    servers: tuple[ServerView, ...] | None = None
    if master_running:
        try:
            running_config = (await api.show_info()).get("description", "")
            running = map_lookup(map_name, await api.show_map(map_name), host, path)
            if running:
                states = await api.show_servers_state()
                servers = tuple(
                    ServerView(s.server, s.address, s.port, s.up, s.in_maintenance)
                    for s in states
                    if s.backend == running and not s.in_maintenance
                )
        except RuntimeAPIError as err:
            log.debug("router=%s runtime api error=%s", name, err)
            running = running_config = None
    try:
        rendered_config = identity.computed((conf / CONFIG_FILE).read_bytes())
    except OSError:
        rendered_config = None
    try:
        loaded = parse_record((work / "run" / LOADED_RECORD).read_text())
    except OSError:
        loaded = LoadedRecord()
    owed: float | None = None
    try:
        owed = max(0.0, time.time() - (work / RELOAD_OWED_MARKER).stat().st_mtime)
    except OSError:
        owed = None
    return RouterView(
        name=name,
        http_bind=binds.get(HTTP_FRONTEND),
        https_bind=binds.get(HTTPS_FRONTEND),
        lookup=f"{map_name} key {lookup_text(map_name, host, path)}",
        rendered=rendered,
        running=running,
        route_backends=backends,
        aliases=aliases,
        servers=servers,
        master_running=master_running,
        reload_owed_seconds=owed,
        master_pid=master_pid,
        master_stopped=master_pid is not None and _stopped(master_pid),
        running_config=running_config,
        rendered_config=rendered_config,
        loaded=loaded,
        shard=shard,
        reload_failed_seconds=(
            max(0.0, time.time() - loaded.failed_at) if loaded.failed_at is not None else None
        ),
    )
