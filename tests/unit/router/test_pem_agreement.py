"""Validation and the PEM writer agree: what validation accepts is written whole.

A Route's TLS material is checked by ``api/tls.py`` and written into HAProxy's
certificate file by ``escape.pem``. If the writer silently dropped a block
validation accepted (a block with RFC 1421 headers, say), HAProxy would
refuse the whole configuration. Every PEM oddity in ``tests/support/hostile``
must therefore be either refused by validation, naming the field, or written
with every certificate and exactly one key, the first it holds. The live check with
real HAProxy is in ``tests/integration/router/test_hostile_tenant.py``.
"""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from tests.support.hostile import PemCase, encrypted_traditional_key, pem_cases
from tests.support.pem import ec_key, issue, key_pem
from tests.support.routes import route

from shiftnet.api import tls, validation
from shiftnet.api.route_validation import extended_tls_errors
from shiftnet.router.haproxy import escape

CA = issue("hostile test CA", ca=True)
LEAF = issue("secure.example.com", issuer=CA)
CASES = list(pem_cases(LEAF.cert_pem, LEAF.key_pem, CA.cert_pem, key_pem(ec_key()), LEAF.key))


def _edge(fields: dict[str, str]) -> object:
    tls = {"termination": "edge", **{k: v for k, v in fields.items() if v}}
    return route("r", "secure.example.com", tls=tls)


def _written(fields: dict[str, str]) -> bytes:
    """The route's certificate file as the router writes it."""
    text = tls.serving_pem(fields["certificate"], fields.get("key"), fields.get("caCertificate"))
    return escape.pem(text, what="route certificate")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_validation_accepts_only_what_the_writer_writes_whole(case: PemCase) -> None:
    problems = extended_tls_errors(_edge(case.tls))  # type: ignore[arg-type]
    if problems:
        assert problems[0].field.startswith("spec.tls."), problems
        return
    data = _written(case.tls)  # must not raise: validation accepted it
    certs = x509.load_pem_x509_certificates(data)
    given = sum(v.count("-----BEGIN CERTIFICATE-----") for v in case.tls.values())
    assert len(certs) == given, "a certificate block was dropped"
    assert certs[0] == LEAF.cert
    assert set(certs) <= {LEAF.cert, CA.cert}
    assert data.count(b"PRIVATE KEY-----\n") == 2, "exactly one key, begun and ended"
    key = serialization.load_pem_private_key(data, password=None)
    assert key.private_numbers() == LEAF.key.private_numbers()  # type: ignore[union-attr]


RFC1421_HEADERS = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF\n"


@pytest.mark.parametrize(
    "key",
    [
        # the headers on a plain body: what used to pass validation and break HAProxy
        LEAF.key_pem.replace("-----\n", "-----\n" + RFC1421_HEADERS + "\n", 1),
        encrypted_traditional_key(LEAF.key),  # really encrypted, as openssl writes it
    ],
    ids=["headers-on-plain-key", "encrypted-key"],
)
def test_rfc1421_encrypted_key_is_refused_naming_the_field(key: str) -> None:
    r = route(
        "r",
        "secure.example.com",
        tls={"termination": "edge", "certificate": LEAF.cert_pem, "key": key},
    )
    assert "Proc-Type: 4,ENCRYPTED" in key
    validation.validate(r)  # the API reads no PEM, as OpenShift's
    (first, *_) = extended_tls_errors(r)  # type: ignore[arg-type]
    message = str(first)
    assert "spec.tls.key" in message
    assert "the private key is encrypted (Proc-Type: 4,ENCRYPTED); give it unencrypted" in message
    assert "\n" not in message


def test_rfc1421_header_on_a_certificate_is_refused_naming_the_field() -> None:
    first, rest = LEAF.cert_pem.split("\n", 1)
    cert = f"{first}\nComment: exported by a tool\n\n{rest}"
    r = route(
        "r",
        "secure.example.com",
        tls={"termination": "edge", "certificate": cert, "key": LEAF.key_pem},
    )
    validation.validate(r)  # the API reads no PEM, as OpenShift's
    (first, *_) = extended_tls_errors(r)  # type: ignore[arg-type]
    assert first.field == "spec.tls.certificate" and "header" in first.message


def test_the_writer_raises_where_it_used_to_drop() -> None:
    """No silent drop: a block the writer cannot copy whole is an error for that route."""
    first, rest = LEAF.cert_pem.split("\n", 1)
    with pytest.raises(escape.UnsafeValue, match="header"):
        escape.pem(f"{first}\nComment: x\n\n{rest}", LEAF.key_pem)
    with pytest.raises(escape.UnsafeValue, match="private key"):
        escape.pem(LEAF.cert_pem + key_pem(ec_key()), LEAF.key_pem)
    with pytest.raises(escape.UnsafeValue, match="private key"):
        escape.pem(CA.cert_pem + LEAF.key_pem, max_keys=0)


def test_every_case_was_decided_both_ways() -> None:
    """The oddities are not all refused (or all accepted): both branches above ran."""
    verdicts = [not extended_tls_errors(_edge(c.tls)) for c in CASES]  # type: ignore[arg-type]
    assert sum(verdicts) >= 8 and verdicts.count(False) >= 20, verdicts
