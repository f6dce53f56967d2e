"""Kernel object names derived from service identities.

User strings never appear in chain or set names: like kube-proxy, a name is a
fixed prefix plus a hash of what the object stands for. The hash is stable, so
the same service always gets the same chain (which makes incremental updates
and idempotent re-applies possible).
"""

from __future__ import annotations

import base64
import functools
import hashlib

from shiftnet.proxy.model import Backend, ServiceEntry


@functools.lru_cache(maxsize=1 << 18)
def name_hash(*parts: str) -> str:
    """16 upper-case base32 characters of sha256 over the parts."""
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    return base64.b32encode(digest).decode()[:16]


def service_hash(entry: ServiceEntry) -> str:
    return name_hash(str(entry.id))


def endpoint_hash(entry: ServiceEntry, backend: Backend) -> str:
    return name_hash(str(entry.id), str(backend))


def affinity_hash(entry: ServiceEntry, backend: Backend) -> str:
    """Includes the timeout: a new timeout is a new set, so rules referencing it change too."""
    return name_hash(str(entry.id), str(backend), str(entry.affinity_timeout))
