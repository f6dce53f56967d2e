"""``GET .../pods/<name>/log``: a container's output from the file its node agent writes.

Node agents write each container's stdout and stderr to
``$SHIFTNET_HOME/nodes/<node>/logs/<namespace>_<pod>/<container>.log`` (see
``shiftnet logs``). The file has no per-line times: with ``timestamps=true``
lines already written carry the file's modification time and followed
lines the time they were read.

Only nodes whose state directory is on this machine (under the server's own
``$SHIFTNET_HOME/nodes/``) can be read; a pod of a node on another machine
gets a 503 saying so and where its logs are, not a "waiting to start".
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

from aiohttp import web

from shiftnet.api.names import parse_integer
from shiftnet.apiserver.status import StatusError, bad_request
from shiftnet.errors import NAME_LIMIT, shorten
from shiftnet.sdn.pods import log_dir

FOLLOW_POLL = 0.2
POD_CHECK = 2.0


def _int_param(params: Any, name: str) -> int | None:
    text = params.get(name)
    if text is None or text == "":
        return None
    value = parse_integer(text)
    if value is None:
        raise bad_request(f'invalid {name} "{text[:32]}": must be an integer')
    return value


def container_log(state_dir: Path, pod: dict[str, Any], container: str | None) -> Path:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    name, ns = str(meta.get("name")), str(meta.get("namespace") or "default")
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    if container is None:
        if len(names) != 1:
            raise bad_request(
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{' '.join(names)}]"
            )
        container = names[0]
    elif container not in names:
        raise bad_request(f"container {container} is not valid for pod {name}")
    node = spec.get("nodeName")
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    waiting = StatusError(
        400,
        "BadRequest",
        f'container "{container}" in pod "{name}" is waiting to start: no logs yet (phase {phase})',
    )
    if not node:
        raise waiting
    node_dir = state_dir / "nodes" / str(node)
    if not node_dir.is_dir():  # its agent keeps its state on another machine
        raise StatusError(
            503,
            "ServiceUnavailable",
            f'logs of pod "{name}" are kept on node "{shorten(str(node), NAME_LIMIT)}", which '
            "this API server cannot read: run shiftnet logs on that node",
        )
    path = log_dir(node_dir, ns, name) / f"{container}.log"
    if not path.exists():
        raise waiting
    return path


def _stamp(when: float) -> bytes:
    text = dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return text.encode() + b" "


def _lines(data: bytes, stamp: bytes | None) -> bytes:
    if stamp is None or not data:
        return data
    parts = data.splitlines(keepends=True)
    return b"".join(stamp + p for p in parts)


def _start(f: BinaryIO, tail: int | None, limit: int | None) -> bytes:
    data = f.read() if tail is None or tail < 0 else b"".join(deque(f, maxlen=tail))
    if limit is not None and limit >= 0:
        data = data[:limit]
    return data


async def serve_log(
    request: web.Request,
    state_dir: Path,
    pod: dict[str, Any],
    still_there: Any,
) -> web.StreamResponse:
    """Write the log (``tailLines``, ``limitBytes``, ``timestamps``, ``follow``).

    ``still_there()`` tells, while following, whether the pod (same uid) still exists.
    """
    params = request.query
    tail = _int_param(params, "tailLines")
    limit = _int_param(params, "limitBytes")
    follow = params.get("follow") in ("true", "1")
    timestamps = params.get("timestamps") in ("true", "1")
    path = container_log(state_dir, pod, params.get("container") or None)
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    with open(path, "rb") as f:
        first = _start(f, tail, limit)
        stamp = _stamp(os.fstat(f.fileno()).st_mtime) if timestamps else None
        await resp.write(_lines(first, stamp))
        if follow:
            await _follow(resp, path, f, timestamps, still_there)
    await resp.write_eof()
    return resp


async def _follow(
    resp: web.StreamResponse, path: Path, f: BinaryIO, timestamps: bool, still_there: Any
) -> None:
    pos = f.tell()
    waited = 0.0
    while True:
        chunk = f.read()
        if chunk:
            now = dt.datetime.now(dt.UTC).timestamp()
            await resp.write(_lines(chunk, _stamp(now) if timestamps else None))
            pos = f.tell()
        elif path.exists() and path.stat().st_size < pos:
            f.seek(0)  # truncated: start over
            pos = 0
        await asyncio.sleep(FOLLOW_POLL)
        waited += FOLLOW_POLL
        if waited >= POD_CHECK:
            waited = 0.0
            if not await still_there():
                return
