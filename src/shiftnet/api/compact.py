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

Pure: no I/O. The table is bounded: it is emptied when it grows past a limit
(later objects then share among themselves again); that costs only sharing.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

# Values that never repeat between objects: interning them only grows the table.
UNIQUE_KEYS = frozenset(
    {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "lastTransitionTime"}
)
LONG_STRING = 256  # certificates, keys and other long values are left alone
TABLE_LIMIT = 200_000

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


class Compactor:
    """Interns the repeated string values of raw objects before they are decoded."""

    def __init__(self, limit: int = TABLE_LIMIT) -> None:
        self.limit = limit
        self._table: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._table)

    def strings(self, raw: dict[str, Any]) -> dict[str, Any]:
        """``raw`` itself, its repeated string values replaced by shared equal ones."""
        if len(self._table) > self.limit:
            self._table = {}
        self._walk(raw)
        return raw

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
