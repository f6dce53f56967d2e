"""v1 Secret: named bytes (certificates, keys, tokens) in a namespace, as Kubernetes has it.

``data`` holds each value base64-encoded, as the wire carries it. ``stringData``
is write-only: its plain-text values are folded into ``data`` (winning over a
``data`` entry of the same key) when the object is read, so a stored or
returned Secret never has it. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii

from pydantic import Field, model_validator

from shiftnet.api.base import Resource

OPAQUE = "Opaque"
TLS = "kubernetes.io/tls"
TLS_CERT_KEY = "tls.crt"
TLS_PRIVATE_KEY_KEY = "tls.key"
MAX_SECRET_SIZE = 1024 * 1024  # bytes, over every value of ``data``


class Secret(Resource):
    """Sensitive bytes, read by the components that need them (the router: TLS secrets)."""

    API_VERSION = "v1"
    KIND = "Secret"
    RESOURCE = "secrets"

    type: str = Field(
        OPAQUE,
        description="What the data is for: Opaque (anything) or kubernetes.io/tls (tls.crt and "
        "tls.key, PEM), among Kubernetes' types. Cannot change once created.",
    )
    data: dict[str, str] = Field(
        default_factory=dict,
        description="Key -> base64-encoded value. Keys are made of letters, digits, '-', '_' "
        "and '.'; all values together may hold at most 1 MiB.",
    )
    string_data: dict[str, str] | None = Field(
        None,
        description="Key -> plain-text value, merged into data on write (over data's value for "
        "the same key). Never returned.",
    )
    immutable: bool | None = Field(
        None, description="When true, data cannot change and immutable cannot be unset."
    )

    @model_validator(mode="after")
    def _fold_string_data(self) -> Secret:
        """Kubernetes merges ``stringData`` into ``data`` on write and never returns it."""
        if self.string_data:
            merged = dict(self.data)
            for key, text in self.string_data.items():
                merged[key] = base64.b64encode(text.encode()).decode()
            self.data = merged
        self.string_data = None
        if not self.type:
            self.type = OPAQUE  # Kubernetes' default for an empty type
        return self

    def value(self, key: str) -> bytes | None:
        """The decoded bytes of ``data[key]``; None when absent or not valid base64."""
        raw = self.data.get(key)
        if raw is None:
            return None
        return decode_value(raw)

    def sizes(self) -> dict[str, int]:
        """Each key's decoded size in bytes (``describe`` shows these, never the values)."""
        return {k: len(decode_value(v) or b"") for k, v in self.data.items()}


def decode_value(raw: str) -> bytes | None:
    """Standard base64 with padding, as Go's ``encoding/json`` reads ``[]byte``; None if not."""
    try:
        return base64.b64decode(raw.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
