# ruff: noqa: E501  (case tables)
"""Route TLS material split as OpenShift splits it: the API reads no PEM (``shiftnet
apply`` accepts the Route); the router's extended validation reads it and marks a
route it cannot serve ``ExtendedValidationFailed``, naming the field."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from tests.support.pem import ec_key, issue, key_pem

from shiftnet.api import parse_object
from shiftnet.api.route import Route
from shiftnet.api.route_validation import extended_tls_errors
from shiftnet.api.validation import errors
from shiftnet.router.admission import EXTENDED_VALIDATION_FAILED, admit
from shiftnet.router.config import RouterConfig

CA = issue("split test CA", ca=True)
LEAF = issue("www.example.com", issuer=CA)
OTHER_CA = issue("another CA", ca=True)
EXPIRED = issue(
    "old.example.com",
    issuer=CA,
    not_before=dt.datetime(2001, 1, 1, tzinfo=dt.UTC),
    not_after=dt.datetime(2002, 1, 1, tzinfo=dt.UTC),
)
ED = issue("ed.example.com", issuer=CA, key=ed25519.Ed25519PrivateKey.generate())
EC_PARAMETERS = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"
DH_PARAMETERS = "-----BEGIN DH PARAMETERS-----\nMAYCAQACAQI=\n-----END DH PARAMETERS-----\n"


def route(termination: str, **fields: str) -> Route:
    raw: dict[str, Any] = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {
            "name": "web",
            "namespace": "demo",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "host": "www.example.com",
            "to": {"kind": "Service", "name": "web"},
            "tls": {"termination": termination, **fields},
        },
    }
    obj = parse_object(raw)
    assert isinstance(obj, Route)
    return obj


# (id, termination, fields, the router's first finding or None when served)
CASES: list[tuple[str, str, dict[str, str], str | None]] = [
    ("certificate and key", "edge", {"certificate": LEAF.cert_pem, "key": LEAF.key_pem}, None),
    (
        "certificate, key and CA",
        "edge",
        {"certificate": LEAF.cert_pem, "key": LEAF.key_pem, "caCertificate": CA.cert_pem},
        None,
    ),
    (
        "key inside the certificate field",
        "edge",
        {"certificate": LEAF.cert_pem + LEAF.key_pem},
        None,
    ),
    (
        "EC PARAMETERS before the key are skipped",
        "edge",
        {"certificate": LEAF.cert_pem, "key": EC_PARAMETERS + LEAF.key_pem},
        None,
    ),
    (
        "an expired certificate is served",
        "edge",
        {"certificate": EXPIRED.cert_pem, "key": EXPIRED.key_pem, "caCertificate": CA.cert_pem},
        None,
    ),
    (
        "certificate not PEM",
        "edge",
        {"certificate": "x", "key": LEAF.key_pem},
        'spec.tls.certificate: Invalid value: "redacted certificate data": no PEM certificate found (expected -----BEGIN CERTIFICATE-----)',
    ),
    (
        "key not PEM",
        "edge",
        {"certificate": LEAF.cert_pem, "key": "not a key"},
        'spec.tls.key: Invalid value: "redacted key data": no PEM private key found (expected -----BEGIN PRIVATE KEY-----)',
    ),
    (
        "a certificate in the key field",
        "edge",
        {"certificate": LEAF.cert_pem, "key": LEAF.key_pem + LEAF.cert_pem},
        'spec.tls.key: Invalid value: "redacted key data": field contains invalid types CERTIFICATE, expecting only PRIVATE KEY',
    ),
    (
        "only a certificate in the key field",
        "edge",
        {"certificate": LEAF.cert_pem, "key": CA.cert_pem},
        'spec.tls.key: Invalid value: "redacted key data": field contains invalid types CERTIFICATE, expecting only PRIVATE KEY',
    ),
    (
        "an unknown parameter block",
        "edge",
        {"certificate": LEAF.cert_pem, "key": DH_PARAMETERS + LEAF.key_pem},
        'spec.tls.key: Invalid value: "redacted key data": unrecognized PEM block DH PARAMETERS',
    ),
    (
        "an Ed25519 key",
        "edge",
        {"certificate": ED.cert_pem, "key": key_pem(ED.key)},
        'spec.tls.key: Invalid value: "redacted key data": private key type Ed25519 is not supported (RSA or ECDSA keys only)',
    ),
    (
        "no key",
        "edge",
        {"certificate": LEAF.cert_pem},
        'spec.tls.key: Invalid value: "": no key specified',
    ),
    (
        "key of another certificate",
        "reencrypt",
        {"certificate": LEAF.cert_pem, "key": key_pem(ec_key())},
        'spec.tls.key: Invalid value: "redacted key data": private key does not match the public key of certificate "CN=www.example.com"',
    ),
    (
        "another CA",
        "edge",
        {"certificate": LEAF.cert_pem, "key": LEAF.key_pem, "caCertificate": OTHER_CA.cert_pem},
        'spec.tls.certificate: Invalid value: "redacted certificate data": certificate "CN=www.example.com" is not signed by the authority in spec.tls.caCertificate (its chain ends at issuer "CN=split test CA")',
    ),
    (
        "destination CA not PEM",
        "reencrypt",
        {"destinationCACertificate": "garbage"},
        'spec.tls.destinationCACertificate: Invalid value: "redacted destination ca certificate data": no PEM certificate found (expected -----BEGIN CERTIFICATE-----)',
    ),
]


@pytest.mark.parametrize(
    ("termination", "fields", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_api_accepts_and_the_router_decides(
    termination: str, fields: dict[str, str], want: str | None
) -> None:
    r = route(termination, **fields)
    assert errors(r) == []  # shiftnet apply / the API server accept it
    found = extended_tls_errors(r)
    assert (str(found[0]) if found else None) == want
    decision = admit([r], [], RouterConfig()).decision("demo", "web")
    assert decision is not None
    assert decision.reason == (None if want is None else EXTENDED_VALIDATION_FAILED)
    if want is not None:
        assert decision.message == want


def test_the_api_still_refuses_what_it_reads() -> None:
    """Termination combinations stay API rules, as upstream."""
    found = errors(route("passthrough", certificate="x"))
    assert [e.field for e in found] == ["spec.tls.certificate"]
