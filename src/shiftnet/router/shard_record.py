"""``run/shard.json``: this router's ``ROUTE_LABELS`` and ``NAMESPACE_LABELS``, for ``diagnose``.

Why a record: ``shiftnet diagnose`` runs in a shell whose environment is not
the router's, and must say which router's shard selects a route. The router
writes its selectors at start, as selector text (``api/selectors.py`` parses
it back); both are fixed for the router's lifetime.
"""

from __future__ import annotations

import json
from pathlib import Path

from shiftnet.api.selectors import Selector, parse_selector
from shiftnet.errors import InvalidInput
from shiftnet.private_files import ensure_private_dir, write_private_file
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.names import SHARD_RECORD


def record_shard(work_dir: Path, config: RouterConfig) -> None:
    """Write ``{"routeLabels": TEXT, "namespaceLabels": TEXT}`` ("": every route)."""
    record = {
        "routeLabels": str(config.route_labels),
        "namespaceLabels": str(config.namespace_labels),
    }
    run = ensure_private_dir(Path(work_dir) / "run")
    write_private_file(run / SHARD_RECORD, json.dumps(record, sort_keys=True))


def parse_shard(text: str) -> tuple[Selector, Selector] | None:
    """(route selector, namespace selector) from the record; None when it is garbled."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    route, namespace = data.get("routeLabels"), data.get("namespaceLabels")
    if not isinstance(route, str) or not isinstance(namespace, str):
        return None
    try:
        return parse_selector(route), parse_selector(namespace)
    except InvalidInput:
        return None
