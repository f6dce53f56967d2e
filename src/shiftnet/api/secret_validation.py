"""v1 Secret rules as Kubernetes' ``ValidateSecret``/``ValidateSecretUpdate``.

Keys are config-map keys; all values together hold at most 1 MiB; a
``kubernetes.io/tls`` Secret has ``tls.crt`` and ``tls.key``. On update the
type cannot change, and once ``immutable`` is true neither ``data`` nor
``immutable`` can. Values are never echoed in a message.
"""

from __future__ import annotations

import re

from shiftnet.api.fielderrors import FieldError, forbidden, invalid, required, too_long
from shiftnet.api.secret import (
    MAX_SECRET_SIZE,
    TLS,
    TLS_CERT_KEY,
    TLS_PRIVATE_KEY_KEY,
    Secret,
    decode_value,
)

_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")
_KEY_MAX = 253
_KEY_FORMAT = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)
IMMUTABLE_SET = "field is immutable when `immutable` is set"


def data_path(key: str) -> str:
    """Kubernetes' path of one entry of a map field: ``data[tls.crt]``."""
    return f"data[{key}]"


def key_problems(key: str) -> list[str]:
    """Kubernetes' ``IsConfigMapKey`` messages for ``key`` ([] when it is valid)."""
    out: list[str] = []
    if len(key) > _KEY_MAX:
        out.append(f"must be no more than {_KEY_MAX} characters")
    if not _KEY_RE.fullmatch(key):
        out.append(_KEY_FORMAT)
    if key == ".":
        out.append("must not be '.'")
    elif key == "..":
        out.append("must not be '..'")
    elif key.startswith(".."):
        out.append("must not start with '..'")
    return out


def secret_errors(secret: Secret) -> list[FieldError]:
    """Every problem of a Secret as a new object."""
    out: list[FieldError] = []
    total = 0
    for key in sorted(secret.data):
        path = data_path(key)
        out += [invalid(path, key, msg) for msg in key_problems(key)]
        value = decode_value(secret.data[key])
        if value is None:
            out.append(invalid(path, "<redacted>", "must be base64-encoded (standard, padded)"))
            continue
        total += len(value)
    if total > MAX_SECRET_SIZE:
        out.append(too_long("data", MAX_SECRET_SIZE))
    if secret.type == TLS:
        for key in (TLS_CERT_KEY, TLS_PRIVATE_KEY_KEY):
            if key not in secret.data:
                out.append(required(data_path(key)))
    return out


def secret_update_errors(secret: Secret, old: Secret) -> list[FieldError]:
    """Every problem of ``secret`` as an update of the stored ``old``."""
    out: list[FieldError] = []
    if secret.type != old.type:
        out.append(invalid("type", secret.type, "field is immutable"))
    if old.immutable:
        if not secret.immutable:
            out.append(forbidden("immutable", IMMUTABLE_SET))
        if secret.data != old.data:
            out.append(forbidden("data", IMMUTABLE_SET))
    return out + secret_errors(secret)
