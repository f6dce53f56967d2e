"""How kubectl names types and objects in its output (``route.route.openshift.io/web``)."""

from __future__ import annotations

from shiftnet.api import Resource


def api_group(cls: type[Resource]) -> str:
    """``route.openshift.io`` for routes, ``""`` for the core group."""
    return cls.API_VERSION.rsplit("/", 1)[0] if "/" in cls.API_VERSION else ""


def type_name(cls: type[Resource]) -> str:
    """Singular kind qualified by group: ``route.route.openshift.io``, ``service``."""
    group = api_group(cls)
    kind = cls.KIND.lower()
    return f"{kind}.{group}" if group else kind


def resource_name(cls: type[Resource]) -> str:
    """Plural resource qualified by group: ``routes.route.openshift.io``, ``services``."""
    group = api_group(cls)
    return f"{cls.RESOURCE}.{group}" if group else cls.RESOURCE


def object_ref(cls: type[Resource], name: str) -> str:
    """What ``apply`` and ``get -o name`` print: ``route.route.openshift.io/web``."""
    return f"{type_name(cls)}/{name}"


def quoted_ref(cls: type[Resource], name: str) -> str:
    """What ``delete`` prints: ``route.route.openshift.io "web"``."""
    return f'{type_name(cls)} "{name}"'
