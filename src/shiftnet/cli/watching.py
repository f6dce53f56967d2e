"""``get -w``: print the current objects, then one row per change as the store reports it.

Learners watch a Route go from ``Pending`` to admitted, or endpoints follow
pods. Rows are printed as they come (like ``kubectl get -w``, a deleted
object's last row is printed too); with ``--output-watch-events`` each row
starts with the event type. Runs until Ctrl-C.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Collection

from shiftnet.api import Resource
from shiftnet.api.selectors import parse_selector
from shiftnet.cli.naming import object_ref
from shiftnet.cli.printing import column_widths, format_row, format_table
from shiftnet.cli.tables import table_rows
from shiftnet.client import Client


async def watch_objects(
    client: Client,
    cls: type[Resource],
    namespace: str | None,
    selector: str | None,
    names: Collection[str],
    *,
    fmt: str | None,
    with_namespace: bool,
    with_events: bool,
) -> int:
    sel = parse_selector(selector)
    listed = await client.store.list(cls.RESOURCE, namespace, selector)
    objects = [cls.model_validate(raw) for raw in listed.items]
    objects = [o for o in objects if not names or o.name in names]
    wide = fmt == "wide"
    header, rows = table_rows(cls, objects, _now(), wide=wide, with_namespace=with_namespace)
    if with_events:
        header = ["EVENT", *header]
        rows = [["ADDED", *r] for r in rows]
    if fmt == "name":
        for o in objects:
            _emit(("ADDED " if with_events else "") + object_ref(cls, o.name))
    else:
        sys.stdout.write(format_table(header, rows))
        sys.stdout.flush()
    widths = column_widths(header, rows)
    async for event in client.store.watch(cls.RESOURCE, listed.revision, namespace):
        obj = cls.model_validate(event.object)
        if names and obj.name not in names:
            continue
        if not sel.matches(obj.metadata.labels):
            continue
        if fmt == "name":
            _emit((f"{event.type} " if with_events else "") + object_ref(cls, obj.name))
            continue
        _, (row,) = table_rows(cls, [obj], _now(), wide=wide, with_namespace=with_namespace)
        if with_events:
            row = [event.type, *row]
        # keep the columns of the table printed first (a longer value pushes its row only)
        _emit(format_row(row, widths))
    return 0


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _emit(line: str) -> None:
    print(line, flush=True)
