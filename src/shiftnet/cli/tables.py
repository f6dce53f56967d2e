"""The ``get`` table of each kind, laid out as kubectl and oc print it.

The columns themselves live in :mod:`shiftnet.api.columns`, shared with the
API server's Tables, so ``shiftnet get`` and ``kubectl get`` print the same.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from shiftnet.api import Resource
from shiftnet.api.columns import cells, columns_for
from shiftnet.api.columns import cluster_networks_column as cluster_networks_column
from shiftnet.api.columns import endpoint_list as endpoint_list
from shiftnet.api.columns import node_status as node_status
from shiftnet.api.columns import pod_status as pod_status
from shiftnet.api.columns import route_host_column as route_host_column
from shiftnet.api.columns import route_services_column as route_services_column
from shiftnet.api.columns import route_termination_column as route_termination_column
from shiftnet.api.columns import service_ports as service_ports
from shiftnet.cli.printing import format_table

Row = list[str]


def render_table(
    cls: type[Resource],
    objects: Sequence[Resource],
    now: dt.datetime,
    *,
    wide: bool = False,
    with_namespace: bool = False,
) -> str:
    """The ``get`` table for objects of one kind (``-A`` adds NAMESPACE first)."""
    header, rows = table_rows(cls, objects, now, wide=wide, with_namespace=with_namespace)
    return format_table(header, rows)


def table_rows(
    cls: type[Resource],
    objects: Sequence[Resource],
    now: dt.datetime,
    *,
    wide: bool = False,
    with_namespace: bool = False,
) -> tuple[list[str], list[Row]]:
    """Header and rows of the ``get`` table, before layout."""
    columns = columns_for(cls, wide=wide)
    header = [c.header for c in columns]
    rows = [cells(columns, obj, now) for obj in objects]
    if with_namespace:
        header.insert(0, "NAMESPACE")
        for obj, row in zip(objects, rows, strict=True):
            row.insert(0, obj.namespace or "")
    return header, rows
