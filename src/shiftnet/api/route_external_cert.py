"""``spec.tls.externalCertificate`` rules as OpenShift's route validation has them.

A named Secret replaces ``certificate`` and ``key``, so it is refused next to
``certificate`` and on passthrough routes (which carry no certificate). An
empty name means no reference. Whether the Secret exists and is of type
``kubernetes.io/tls`` is the router's check (it reads Secrets; validation
does no I/O): a Route may be created before its Secret.
"""

from __future__ import annotations

from shiftnet.api.fielderrors import FieldError, invalid
from shiftnet.api.route import TLSConfig

FIELD = "spec.tls.externalCertificate"


def external_certificate_name(tls: TLSConfig | None) -> str:
    """The referenced Secret's name, or "" when there is none."""
    if tls is None or tls.external_certificate is None:
        return ""
    return tls.external_certificate.name


def external_certificate_errors(tls: TLSConfig) -> list[FieldError]:
    name = external_certificate_name(tls)
    if not name:
        return []
    if tls.termination == "passthrough":
        return [invalid(FIELD, name, "passthrough termination does not support certificates")]
    if tls.certificate:
        return [
            invalid(FIELD, name, "cannot specify both tls.certificate and tls.externalCertificate")
        ]
    return []
