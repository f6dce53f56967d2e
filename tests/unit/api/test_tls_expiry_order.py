# ruff: noqa: E501  (case table)
"""Certificate dates and the order of checks, as OpenShift's router decides them.

OpenShift verifies the certificate against ``caCertificate`` with Go's
verifier, whose first check is the leaf's dates, and tolerates an ``Expired``
outcome: so an expired (or not-yet-valid) leaf is served with a wrong CA, an
expired issuing CA is tolerated, a mismatched key is refused whatever the
dates, and ``destinationCACertificate`` dates are never read. Every
certificate is made here with fixed validity windows; the time is passed in.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.support.pem import Issued, cert_pem, ec_key, issue, key_pem

from shiftnet.api import parse_object
from shiftnet.api.route import Route
from shiftnet.api.route_validation import extended_tls_errors
from shiftnet.api.validation import errors
from shiftnet.router.admission import EXTENDED_VALIDATION_FAILED, admit
from shiftnet.router.admission_index import AdmissionIndex
from shiftnet.router.config import RouterConfig

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
PAST = (dt.datetime(2001, 1, 1, tzinfo=dt.UTC), dt.datetime(2002, 1, 1, tzinfo=dt.UTC))
FUTURE = (dt.datetime(2030, 1, 1, tzinfo=dt.UTC), dt.datetime(2040, 1, 1, tzinfo=dt.UTC))
VALID = (dt.datetime(2020, 1, 1, tzinfo=dt.UTC), dt.datetime(2040, 1, 1, tzinfo=dt.UTC))

CA = issue("order test CA", ca=True)
OTHER_CA = issue("another CA", ca=True)
SAME_NAME_CA = issue("order test CA", ca=True)  # CA's name, another key
LEAF = issue("www.example.com", issuer=CA)
EXPIRED_LEAF = issue("www.example.com", issuer=CA, not_before=PAST[0], not_after=PAST[1])
FUTURE_LEAF = issue("www.example.com", issuer=CA, not_before=FUTURE[0], not_after=FUTURE[1])
EXPIRED_CA = issue("expired CA", ca=True, not_before=PAST[0], not_after=PAST[1])
LEAF_OF_EXPIRED_CA = issue("www.example.com", issuer=EXPIRED_CA)
EXPIRED_SAME_NAME_CA = issue(
    "expired CA", ca=True, not_before=PAST[0], not_after=PAST[1]
)  # EXPIRED_CA's name, another key
EXPIRED_INTERMEDIATE = issue(
    "expired intermediate", issuer=CA, ca=True, not_before=PAST[0], not_after=PAST[1]
)
LEAF_OF_EXPIRED_INTERMEDIATE = issue("www.example.com", issuer=EXPIRED_INTERMEDIATE)
INTERMEDIATE_OF_EXPIRED_ROOT = issue("intermediate", issuer=EXPIRED_CA, ca=True)
LEAF_UNDER_EXPIRED_ROOT = issue("www.example.com", issuer=INTERMEDIATE_OF_EXPIRED_ROOT)
WRONG_KEY = key_pem(ec_key())

UNKNOWN = 'spec.tls.certificate: Invalid value: "redacted certificate data": error verifying certificate: x509: certificate signed by unknown authority'
KEY_MISMATCH = (
    'spec.tls.key: Invalid value: "redacted key data": tls: private key does not match public key'
)


def _client_only(issuer: Issued, window: tuple[dt.datetime, dt.datetime] = VALID) -> Issued:
    """A leaf whose extended key usage allows client authentication only."""
    key = ec_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "www.example.com")]))
        .issuer_name(issuer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(window[0])
        .not_valid_after(window[1])
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(issuer.key, hashes.SHA256())
    )
    return Issued(cert, key)


CLIENT_ONLY = _client_only(CA)
EXPIRED_CLIENT_ONLY = _client_only(CA, PAST)


def edge(leaf: Issued, ca: str | None = None, key: str | None = None) -> dict[str, str]:
    fields = {"certificate": leaf.cert_pem, "key": key or leaf.key_pem}
    if ca is not None:
        fields["caCertificate"] = ca
    return fields


# (case, termination, tls fields, what the router says first at NOW: None is admitted)
CASES: list[tuple[str, str, dict[str, str], str | None]] = [
    ("valid leaf, its CA", "edge", edge(LEAF, CA.cert_pem), None),
    ("valid leaf, a wrong CA", "edge", edge(LEAF, OTHER_CA.cert_pem), UNKNOWN),
    (
        "valid leaf, a CA of its issuer's name with another key",
        "edge",
        edge(LEAF, SAME_NAME_CA.cert_pem),
        UNKNOWN
        + ' (possibly because of "x509: ECDSA verification failure" while trying to verify candidate authority certificate "order test CA")',
    ),
    (
        "valid leaf, a wrong CA and a mismatched key: the certificate first",
        "edge",
        edge(LEAF, OTHER_CA.cert_pem, WRONG_KEY),
        UNKNOWN,
    ),
    ("expired leaf, its CA", "edge", edge(EXPIRED_LEAF, CA.cert_pem), None),
    ("expired leaf, no CA", "edge", edge(EXPIRED_LEAF), None),
    (
        "expired leaf, a wrong CA: dates come first, then tolerated",
        "edge",
        edge(EXPIRED_LEAF, OTHER_CA.cert_pem),
        None,
    ),
    (
        "expired leaf, a CA of its issuer's name with another key",
        "edge",
        edge(EXPIRED_LEAF, SAME_NAME_CA.cert_pem),
        None,
    ),
    (
        "expired leaf, a wrong CA and a mismatched key",
        "edge",
        edge(EXPIRED_LEAF, OTHER_CA.cert_pem, WRONG_KEY),
        KEY_MISMATCH,
    ),
    (
        "expired leaf, no CA, a mismatched key",
        "edge",
        edge(EXPIRED_LEAF, key=WRONG_KEY),
        KEY_MISMATCH,
    ),
    ("not-yet-valid leaf, its CA", "edge", edge(FUTURE_LEAF, CA.cert_pem), None),
    ("not-yet-valid leaf, a wrong CA", "edge", edge(FUTURE_LEAF, OTHER_CA.cert_pem), None),
    (
        "not-yet-valid leaf, a wrong CA and a mismatched key",
        "edge",
        edge(FUTURE_LEAF, OTHER_CA.cert_pem, WRONG_KEY),
        KEY_MISMATCH,
    ),
    (
        "expired CA that signed the leaf",
        "edge",
        edge(LEAF_OF_EXPIRED_CA, EXPIRED_CA.cert_pem),
        None,
    ),
    (
        "expired CA that signed the leaf, a mismatched key",
        "edge",
        edge(LEAF_OF_EXPIRED_CA, EXPIRED_CA.cert_pem, WRONG_KEY),
        KEY_MISMATCH,
    ),
    (
        "expired CA of the issuer's name with another key: signature before dates",
        "edge",
        edge(LEAF_OF_EXPIRED_CA, EXPIRED_SAME_NAME_CA.cert_pem),
        UNKNOWN
        + ' (possibly because of "x509: ECDSA verification failure" while trying to verify candidate authority certificate "expired CA")',
    ),
    (
        "expired intermediate in caCertificate",
        "edge",
        edge(LEAF_OF_EXPIRED_INTERMEDIATE, cert_pem(EXPIRED_INTERMEDIATE.cert, CA.cert)),
        None,
    ),
    (
        "expired intermediate in caCertificate, a mismatched key",
        "edge",
        edge(LEAF_OF_EXPIRED_INTERMEDIATE, cert_pem(EXPIRED_INTERMEDIATE.cert, CA.cert), WRONG_KEY),
        KEY_MISMATCH,
    ),
    (
        "valid intermediate under an expired root: the intermediate anchors",
        "edge",
        edge(LEAF_UNDER_EXPIRED_ROOT, cert_pem(INTERMEDIATE_OF_EXPIRED_ROOT.cert, EXPIRED_CA.cert)),
        None,
    ),
    (
        "intermediate only in the certificate bundle: caCertificate alone is the pool",
        "edge",
        {
            "certificate": cert_pem(
                LEAF_UNDER_EXPIRED_ROOT.cert, INTERMEDIATE_OF_EXPIRED_ROOT.cert
            ),
            "key": LEAF_UNDER_EXPIRED_ROOT.key_pem,
            "caCertificate": EXPIRED_CA.cert_pem,
        },
        UNKNOWN,
    ),
    (
        "a leaf for client authentication only",
        "edge",
        edge(CLIENT_ONLY, CA.cert_pem),
        'spec.tls.certificate: Invalid value: "redacted certificate data": error verifying certificate: x509: certificate specifies an incompatible key usage',
    ),
    (
        "an expired leaf for client authentication only: dates come first",
        "edge",
        edge(EXPIRED_CLIENT_ONLY, CA.cert_pem),
        None,
    ),
    (
        "expired destinationCACertificate",
        "reencrypt",
        {"destinationCACertificate": EXPIRED_CA.cert_pem},
        None,
    ),
    (
        "expired destinationCACertificate, expired leaf, wrong CA",
        "reencrypt",
        {**edge(EXPIRED_LEAF, OTHER_CA.cert_pem), "destinationCACertificate": EXPIRED_CA.cert_pem},
        None,
    ),
    (
        "expired destinationCACertificate, valid leaf, wrong CA",
        "reencrypt",
        {**edge(LEAF, OTHER_CA.cert_pem), "destinationCACertificate": EXPIRED_CA.cert_pem},
        UNKNOWN,
    ),
    (
        "expired destinationCACertificate, a mismatched key",
        "reencrypt",
        {**edge(EXPIRED_LEAF, key=WRONG_KEY), "destinationCACertificate": EXPIRED_CA.cert_pem},
        KEY_MISMATCH,
    ),
]


def route(termination: str, fields: dict[str, str]) -> Route:
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


@pytest.mark.parametrize(
    ("termination", "fields", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_router_decides_at_the_time_it_is_given(
    termination: str, fields: dict[str, str], want: str | None
) -> None:
    r = route(termination, fields)
    assert errors(r) == []  # the API accepts every one of them
    found = extended_tls_errors(r, NOW)
    assert (str(found[0]) if found else None) == want
    decision = admit([r], [], RouterConfig(), now=NOW).decision("demo", "web")
    assert decision is not None
    assert decision.reason == (None if want is None else EXTENDED_VALIDATION_FAILED)
    assert decision.message == want


def test_a_wrong_ca_and_a_mismatched_key_are_both_reported() -> None:
    """As upstream's error list: the key is checked whatever the chain gave."""
    found = extended_tls_errors(route("edge", edge(LEAF, OTHER_CA.cert_pem, WRONG_KEY)), NOW)
    assert [str(e) for e in found] == [UNKNOWN, KEY_MISMATCH]


def test_a_ca_that_expired_is_named_with_gos_dates() -> None:
    """Go's Expired text carries both times (RFC 3339, UTC); it is tolerated, not shown."""
    from shiftnet.api import tls_chain

    err = tls_chain.verify_error(LEAF_OF_EXPIRED_CA.cert, [EXPIRED_CA.cert], NOW)
    assert err == tls_chain.GoError(
        "x509: certificate has expired or is not yet valid: current time 2026-06-01T12:00:00Z is after 2002-01-01T00:00:00Z",
        expired=True,
    )
    future = tls_chain.verify_error(FUTURE_LEAF.cert, [OTHER_CA.cert], NOW)
    assert future is not None and future.expired
    assert future.text.endswith("current time 2026-06-01T12:00:00Z is before 2030-01-01T00:00:00Z")


def test_the_same_route_turns_as_its_leaf_leaves_its_window() -> None:
    """A valid leaf with a wrong CA is refused; judged after the leaf's end it is served."""
    r = route("edge", edge(LEAF, OTHER_CA.cert_pem))  # LEAF is valid 2020-2040
    index = AdmissionIndex(RouterConfig())
    index.update({("demo", "web"): r}, {}, now=NOW)
    first = index.decisions[("demo", "web")]
    assert first.reason == EXTENDED_VALIDATION_FAILED and first.message == UNKNOWN
    index.update({("demo", "web"): r}, {}, now=dt.datetime(2041, 1, 1, tzinfo=dt.UTC))
    assert index.decisions[("demo", "web")].admitted
