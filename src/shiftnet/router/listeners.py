"""``run/listeners.json``: the addresses this router's HAProxy listens on, for ``diagnose``.

Why a record: ``shiftnet diagnose`` may run in a shell whose environment
differs from the router's, and reading the addresses back out of the rendered
``haproxy.cfg`` would be a second parser of the writer's syntax. The router
writes, at start, the values the writer puts on the ``bind`` lines of its
HTTP and HTTPS frontends (:func:`~shiftnet.router.haproxy.writer.public_binds`);
both are fixed for the router's lifetime.
"""

from __future__ import annotations

import json
from pathlib import Path

from shiftnet.private_files import ensure_private_dir, write_private_file
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.names import LISTENERS_RECORD
from shiftnet.router.haproxy.writer import public_binds


def record_listeners(work_dir: Path, config: RouterConfig) -> None:
    """Write ``{frontend: {"address": ..., "port": ...}}`` ("" address: every address)."""
    record = {
        name: {"address": address, "port": port}
        for name, (address, port) in public_binds(config).items()
    }
    write_private_file(
        ensure_private_dir(Path(work_dir) / "run") / LISTENERS_RECORD,
        json.dumps(record, sort_keys=True),
    )
