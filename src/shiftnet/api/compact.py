"""Smaller API objects for long-lived caches (informers): same values, less memory.

Why: an informer keeps every object of its kind for the life of the process;
at 10,000 routes a router holds 30,000 Routes, Services and Endpoints. Two
things dominate what a decoded object costs beyond its values:

* **pydantic's per-instance "fields set"**: every model instance, nested ones
  included, carries its own ``__pydantic_fields_set__`` (a ``set``: 216 bytes,
  728 once it holds five names); a Route decodes into about a dozen models,
  so these sets were 40 % of the cache (measured: 174 → 102 MB for 30,000
  objects). Nothing in shiftnet reads them (they only serve
  ``model_dump(exclude_unset=True)`` and ``model_fields_set``), so an
  instance decoded with ``context=COMPACT`` points at one shared set per
  class holding every field name (``Wire.model_post_init`` does it while
  pydantic builds the object, which costs far less than walking it after).
  pydantic's only write to it, ``add(name)`` on attribute assignment, adds a
  name already there, so a shared set stays correct; copies
  (``model_copy``) get their own set as before.
* **repeated strings**: JSON decoding makes a new ``str`` for every value, so
  the namespace, kinds, protocols, port names and label values are stored
  once per object. :class:`Compactor` replaces, in place, each raw dict's
  string values by the table's copy (pydantic keeps the ``str`` it is given),
  except values unique to one object (uid, resourceVersion, timestamps).

Pure: no I/O. The table forgets what no object uses any more. Why: a
long-running process decodes every name, host and timestamp that ever
existed, and a table that only grew would hold them all (about 1 KiB per
Route and Service created and deleted, in each component's table). Each time
it has doubled since it was last pruned (and holds at least
:data:`PRUNE_FLOOR` entries), it keeps only the strings something besides the
table still references (``sys.getrefcount``): one pass per doubling, so
lookups stay O(1) amortised, and the strings of live objects stay shared. On
an interpreter without ``sys.getrefcount`` a full table is emptied instead
(later objects then share among themselves again).
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

# Values that never repeat between objects: interning them only grows the table.
UNIQUE_KEYS = frozenset(
    {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "lastTransitionTime"}
)
LONG_STRING = 256  # certificates, keys and other long values are left alone
PRUNE_FLOOR = 512  # entries: below this the table is never pruned

# Validation context that asks for compact instances (compared by identity).
COMPACT: dict[str, bool] = {"compact": True}

_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}


def share_fields_set(obj: BaseModel) -> None:
    """Point one model instance at its class's shared fields set (all field names)."""
    cls = type(obj)
    shared = _ALL_FIELDS.get(cls)
    if shared is None:
        shared = _ALL_FIELDS[cls] = set(cls.model_fields)
    object.__setattr__(obj, "__pydantic_fields_set__", shared)


def _in_use(table: dict[str, str], table_only: int) -> dict[str, str]:
    """The entries something besides ``table`` still references."""
    return {s: s for s in table if sys.getrefcount(s) > table_only}


def _table_only_references() -> int:
    """What ``getrefcount`` reports inside :func:`_in_use` for a string only its table
    holds (key, value, loop variable, argument: 4 on CPython 3.11); 0 without it."""
    if not hasattr(sys, "getrefcount"):
        return 0
    probe = "".join(("compactor-", "probe"))  # built at run time: no constant holds it
    table = {probe: probe}
    del probe
    return next((n for n in range(1, 64) if not _in_use(table, n)), 0)


_TABLE_ONLY = _table_only_references()


class Compactor:
    """Interns the repeated string values of raw objects before they are decoded."""

    def __init__(self, prune_at: int = PRUNE_FLOOR) -> None:
        self.floor = prune_at
        self._prune_at = prune_at
        self._table: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._table)

    def strings(self, raw: dict[str, Any]) -> dict[str, Any]:
        """``raw`` itself, its repeated string values replaced by shared equal ones."""
        if len(self._table) >= self._prune_at:
            self.prune()
        self._walk(raw)
        return raw

    def prune(self) -> None:
        """Forget the strings no object uses any more (all of them without refcounts)."""
        self._table = _in_use(self._table, _TABLE_ONLY) if _TABLE_ONLY else {}
        self._prune_at = max(self.floor, 2 * len(self._table))

    def _walk(self, d: dict[str, Any]) -> None:
        table = self._table
        for key, value in d.items():
            kind = type(value)
            if kind is str:
                if key not in UNIQUE_KEYS and len(value) <= LONG_STRING:
                    d[key] = table.setdefault(value, value)
            elif kind is dict:
                self._walk(value)
            elif kind is list:
                for i, item in enumerate(value):
                    if type(item) is dict:
                        self._walk(item)
                    elif type(item) is str and len(item) <= LONG_STRING:
                        value[i] = table.setdefault(item, item)
