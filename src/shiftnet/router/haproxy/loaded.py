"""``run/loaded.json``: the configuration the router had HAProxy load, what the runtime API
serves on top of it, and the last refused check or reload.

Why: HAProxy's ``show info`` names the configuration it loaded
(``identity.py``), but ``haproxy.cfg`` on disk moves on without a reload
when the runtime API applies a change (server addresses, weights and states,
map entries). ``diagnose`` compares HAProxy's answer with the file on disk;
this record says which rendered file the accepted runtime commands made
HAProxy serve in full on top of the loaded one, and why a reload did not
happen. The driver writes it (:func:`write_record`); ``diagnose`` reads it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from shiftnet.router.haproxy.names import LOADED_RECORD


@dataclass(frozen=True)
class LoadedRecord:
    loaded: str | None = None  # identity of the configuration HAProxy last loaded
    served: str | None = None  # identity of the rendered file served in full on top of it
    failed: str = ""  # the last refused check or reload, one line ("": none since the load)
    failed_at: float | None = None  # when (Unix time)


def write_record(run_dir: Path, record: LoadedRecord) -> None:
    """Replace ``run/loaded.json`` (a reader sees the old record or the new)."""
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = run_dir / (LOADED_RECORD + ".tmp")
    tmp.write_text(json.dumps(asdict(record), sort_keys=True))
    tmp.replace(run_dir / LOADED_RECORD)


def parse_record(text: str) -> LoadedRecord:
    """The record in ``text``; fields of the wrong type (or garbled JSON) are left empty."""
    try:
        data = json.loads(text)
    except ValueError:
        return LoadedRecord()
    if not isinstance(data, dict):
        return LoadedRecord()
    loaded, served = data.get("loaded"), data.get("served")
    failed, failed_at = data.get("failed"), data.get("failed_at")
    return LoadedRecord(
        loaded=loaded if isinstance(loaded, str) else None,
        served=served if isinstance(served, str) else None,
        failed=failed if isinstance(failed, str) else "",
        failed_at=float(failed_at) if isinstance(failed_at, int | float) else None,
    )
