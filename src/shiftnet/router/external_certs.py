"""Routes whose certificate lives in a Secret (``spec.tls.externalCertificate``), read as
routes with that certificate inline.

Why here and pure: the router serves a route's TLS material from one place
(``spec.tls.certificate``/``key``), checked once by admission and written by
one writer. A route that names a Secret is handed to admission with the
Secret's ``tls.crt`` and ``tls.key`` in those fields, so its certificate
follows the same PEM grammar and checks as an inline one, and a Secret that
changes is just a route whose certificate changed (which the driver serves
through the runtime API, without a reload). A Secret that is missing, not
``kubernetes.io/tls`` or unusable gives the route a refusal instead, as
OpenShift's router does (``ExternalCertificateValidationFailed``); other
routes never notice. No I/O: the Secret comes from the router's informer.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from shiftnet.api import Route
from shiftnet.api.route_external_cert import FIELD, external_certificate_name
from shiftnet.api.route_validation import extended_tls_errors
from shiftnet.api.secret import MAX_SECRET_SIZE, TLS, TLS_CERT_KEY, TLS_PRIVATE_KEY_KEY, Secret
from shiftnet.router.admission import EXTENDED_VALIDATION_FAILED

EXTERNAL_CERTIFICATE_VALIDATION_FAILED = "ExternalCertificateValidationFailed"

SecretKey = tuple[str, str]  # (namespace, name)
# Where a problem of the resolved certificate really is: the Secret's keys.
_SECRET_FIELD = {"spec.tls.certificate": TLS_CERT_KEY, "spec.tls.key": TLS_PRIVATE_KEY_KEY}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a route's external certificate cannot be served: its status reason and message."""

    reason: str
    message: str


def secret_of(route: Route) -> SecretKey | None:
    """The Secret a route's certificate comes from, or None."""
    name = external_certificate_name(route.spec.tls)
    return (route.metadata.namespace or "", name) if name else None


def _text(secret: Secret, key: str) -> str | None:
    """The key's value as PEM text; None when absent or empty (see :func:`_not_pem`)."""
    value = secret.value(key)
    if not value:
        return None
    try:
        return value.decode("ascii")  # PEM is ASCII; anything else cannot be a certificate
    except UnicodeDecodeError:
        return None


def _not_pem(secret: Secret, key: str) -> str:
    """Why the key's value is not PEM text, in words that point at the byte to fix."""
    value = secret.value(key)
    if not value:
        return f"data[{key}] is not base64" if secret.data.get(key) else f"has no data[{key}]"
    at = next(i for i, byte in enumerate(value) if byte > 0x7F)
    return f"data[{key}] is not PEM text: byte 0x{value[at]:02x} at offset {at} is not ASCII"


def resolve(
    route: Route, secret: Secret | None, now: dt.datetime | None = None
) -> tuple[Route, Refusal | None]:
    """``route`` with its Secret's certificate inline, or ``route`` and why it cannot be served.

    Routes without a reference come back as they are; so do routes the API
    rules refuse anyway (a reference beside ``certificate``, on passthrough):
    admission names that problem.
    """
    tls = route.spec.tls
    name = external_certificate_name(tls)
    if tls is None or not name or tls.certificate or tls.termination == "passthrough":
        return route, None
    if secret is None:
        return route, Refusal(
            EXTERNAL_CERTIFICATE_VALIDATION_FAILED,
            f'{FIELD}: Not found: "secrets \\"{name}\\" not found"',
        )
    if secret.type != TLS:
        return route, Refusal(
            EXTERNAL_CERTIFICATE_VALIDATION_FAILED,
            f'{FIELD}: Invalid value: "{name}": secret of type "{TLS}" required',
        )
    if sum(secret.sizes().values()) > MAX_SECRET_SIZE:  # a store written around validation
        return route, Refusal(
            EXTERNAL_CERTIFICATE_VALIDATION_FAILED,
            f'{FIELD}: secret "{name}" holds more than {MAX_SECRET_SIZE} bytes',
        )
    cert, key = _text(secret, TLS_CERT_KEY), _text(secret, TLS_PRIVATE_KEY_KEY)
    for data_key, text in ((TLS_CERT_KEY, cert), (TLS_PRIVATE_KEY_KEY, key)):
        if not text:
            return route, Refusal(
                EXTERNAL_CERTIFICATE_VALIDATION_FAILED,
                f'{FIELD}: secret "{name}" {_not_pem(secret, data_key)}',
            )
    assert cert is not None and key is not None
    new_tls = tls.model_copy(update={"certificate": cert, "key": key, "external_certificate": None})
    resolved = route.model_copy(update={"spec": route.spec.model_copy(update={"tls": new_tls})})
    for problem in extended_tls_errors(resolved, now):
        where = _SECRET_FIELD.get(problem.field)
        if where is not None:
            detail = problem.message.split(": ", 2)[-1] if ": " in problem.message else ""
            return route, Refusal(
                EXTENDED_VALIDATION_FAILED,
                f'{FIELD}: secret "{name}" data[{where}]: {detail or problem.message}',
            )
    return resolved, None
