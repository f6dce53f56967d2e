# ruff: noqa: E501  (case tables)
"""Route TLS material split as OpenShift splits it: the API reads no PEM (``shiftnet
apply`` accepts the Route); the router's extended validation reads it and marks a
route it cannot serve ``ExtendedValidationFailed``, naming the field."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from tests.support.pem import ec_key, issue, key_pem

from shiftnet.api import parse_object, tls
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
def relabel(pem: str, label: str) -> str:
    """The same DER under another PEM label (as some tools write keys)."""
    body = "\n".join(line for line in pem.splitlines() if not line.startswith("-----"))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n"


OTHER_KEY = key_pem(ec_key())
TRADITIONAL = key_pem(LEAF.key, traditional=True)  # SEC1, "EC PRIVATE KEY"

CASES: list[tuple[str, str, dict[str, str], str | None]] = [
    # which blocks are used, as OpenShift's router decides
    (
        "ECDSA PRIVATE KEY label",
        "edge",
        {"certificate": LEAF.cert_pem, "key": relabel(TRADITIONAL, "ECDSA PRIVATE KEY")},
        None,
    ),
    (
        "PKCS#8 under the EC PRIVATE KEY label",
        "edge",
        {"certificate": LEAF.cert_pem, "key": relabel(LEAF.key_pem, "EC PRIVATE KEY")},
        None,
    ),
    (
        "SEC1 under the PRIVATE KEY label",
        "edge",
        {"certificate": LEAF.cert_pem, "key": relabel(TRADITIONAL, "PRIVATE KEY")},
        None,
    ),
    (
        "two keys, the first matches",
        "edge",
        {"certificate": LEAF.cert_pem, "key": LEAF.key_pem + OTHER_KEY},
        None,
    ),
    (
        "two keys, the first does not match",
        "edge",
        {"certificate": LEAF.cert_pem, "key": OTHER_KEY + LEAF.key_pem},
        'spec.tls.key: Invalid value: "redacted key data": tls: private key does not match public key',
    ),
    (
        "a key in the certificate field comes first",
        "edge",
        {"certificate": LEAF.cert_pem + LEAF.key_pem, "key": OTHER_KEY},
        None,
    ),
    (
        "a wrong key in the certificate field comes first",
        "edge",
        {"certificate": LEAF.cert_pem + OTHER_KEY, "key": LEAF.key_pem},
        'spec.tls.key: Invalid value: "redacted key data": tls: private key does not match public key',
    ),
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
        'spec.tls.key: Invalid value: "redacted key data": tls: private key does not match public key',
    ),
    (
        "another CA",
        "edge",
        {"certificate": LEAF.cert_pem, "key": LEAF.key_pem, "caCertificate": OTHER_CA.cert_pem},
        'spec.tls.certificate: Invalid value: "redacted certificate data": error verifying certificate: x509: certificate signed by unknown authority',
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


@pytest.mark.parametrize(
    ("certificate", "key"),
    [
        (LEAF.cert_pem, relabel(TRADITIONAL, "ECDSA PRIVATE KEY")),
        (LEAF.cert_pem, LEAF.key_pem + OTHER_KEY),
        (LEAF.cert_pem + LEAF.key_pem, OTHER_KEY),
        (LEAF.cert_pem, EC_PARAMETERS + relabel(LEAF.key_pem, "EC PRIVATE KEY")),
    ],
    ids=["ECDSA label", "two keys", "key in certificate first", "parameters and a relabelled key"],
)
def test_the_served_file_has_the_certificates_and_the_first_key(certificate: str, key: str) -> None:
    served = tls.serving_pem(certificate, key, CA.cert_pem)
    labels = [line for line in served.splitlines() if line.startswith("-----BEGIN")]
    assert labels == [
        "-----BEGIN CERTIFICATE-----",
        "-----BEGIN EC PRIVATE KEY-----",  # re-encoded as SEC1, as OpenShift writes it
        "-----BEGIN CERTIFICATE-----",
    ]
    loaded = serialization.load_pem_private_key(served.encode(), password=None)
    assert loaded.private_numbers() == LEAF.key.private_numbers()  # type: ignore[union-attr]
    assert x509.load_pem_x509_certificates(served.encode()) == [LEAF.cert, CA.cert]
