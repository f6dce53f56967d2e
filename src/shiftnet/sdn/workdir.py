"""The ``shiftnet.io/workdir`` annotation: where a pod's commands start.

Local-mode pods run commands from the host's file system, so a manifest next
to its script wants "run it from here". A manifest says
``shiftnet.io/workdir: "."`` (or any relative path) and ``apply``/``up``
resolve it against the manifest file's directory when they read it; the node
agent only ever sees an absolute path. Pure and without I/O.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

WORKDIR_ANNOTATION = "shiftnet.io/workdir"


def resolve_workdir_annotation(data: Any, base: Path) -> None:
    """Make a relative workdir annotation of a Pod document absolute (in place)."""
    if not isinstance(data, dict) or data.get("kind") != "Pod":
        return
    meta = data.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return
    value = annotations.get(WORKDIR_ANNOTATION)
    if isinstance(value, str) and value and not Path(value).is_absolute():
        annotations[WORKDIR_ANNOTATION] = str((base / value).absolute())
