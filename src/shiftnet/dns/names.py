"""The one gate between Kubernetes strings and DNS labels.

Every label that reaches a DNS answer passes :func:`dns_label` (or
:func:`is_dns1123_subdomain` for ExternalName targets, :func:`is_port_name`
for SRV port labels). The rules themselves are the shared ones of
:mod:`shiftnet.api.names`, so a name the API accepts is a name DNS serves.
"""

from __future__ import annotations

from shiftnet.api.names import is_dns1123_label, is_dns1123_subdomain, port_name_errors

__all__ = ["dns_label", "is_dns1123_label", "is_dns1123_subdomain", "is_port_name"]


def is_port_name(value: str) -> bool:
    """IANA_SVC_NAME: what Kubernetes allows as a named port."""
    return bool(value) and not port_name_errors(value)


def dns_label(value: str) -> bytes:
    """``value`` as one wire label, or :class:`ValueError` naming why not."""
    if not is_dns1123_label(value):
        raise ValueError(f"{value!r} is not a DNS-1123 label")
    return value.encode("ascii")
