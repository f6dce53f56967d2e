"""The one gate between Kubernetes strings and DNS labels.

Every label that reaches a DNS answer passes :func:`dns_label` (or
:func:`dns_subdomain` for ExternalName targets). The checks are the
Kubernetes DNS-1123 rules; when ``shiftnet.api`` offers them they are used,
so there is one definition of a valid name in the code base.
"""

from __future__ import annotations

import re

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# IANA service names as Kubernetes accepts them for port names: lowercase
# letters, digits and inner hyphens, at least one letter, at most 15 characters.
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$")


def is_dns1123_label(value: str) -> bool:
    """RFC 1123 label as Kubernetes validates it (lowercase, <= 63 characters)."""
    return bool(_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    """Dot-separated DNS-1123 labels, <= 253 characters in total."""
    return 0 < len(value) <= 253 and all(is_dns1123_label(p) for p in value.split("."))


def is_port_name(value: str) -> bool:
    """IANA_SVC_NAME: what Kubernetes allows as a named port."""
    return bool(_PORT_NAME.match(value)) and "--" not in value and any(c.isalpha() for c in value)


def dns_label(value: str) -> bytes:
    """``value`` as one wire label, or :class:`ValueError` naming why not."""
    if not is_dns1123_label(value):
        raise ValueError(f"{value!r} is not a DNS-1123 label")
    return value.encode("ascii")
