"""PEM checks behind a router's ExtendedValidationFailed, with certificates made in the test."""

from __future__ import annotations

import datetime as dt

import pytest
from tests.support.pem import (
    EXPIRED_FROM,
    EXPIRED_UNTIL,
    Issued,
    cert_pem,
    ec_key,
    issue,
    issue_weak,
    key_pem,
    rsa_key,
)

from shiftnet.api import tls, tls_chain
from shiftnet.api.route import TLSConfig

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def ca() -> Issued:
    return issue("test root CA", ca=True)


@pytest.fixture(scope="module")
def leaf(ca: Issued) -> Issued:
    return issue("www.example.com", issuer=ca)


@pytest.fixture(scope="module")
def rsa_ca() -> Issued:
    return issue("rsa root CA", ca=True, key=rsa_key())


def edge(**fields: str) -> TLSConfig:
    return TLSConfig(termination="edge", **fields)


# ---------------------------------------------------------------- parsing


def test_parse_certificates_keeps_bundle_order(ca: Issued, leaf: Issued) -> None:
    certs = tls.parse_certificates(cert_pem(leaf.cert, ca.cert), "spec.tls.certificate")
    assert certs == [leaf.cert, ca.cert]


def test_text_around_blocks_is_ignored(leaf: Issued) -> None:
    data = "subject=www.example.com\n" + leaf.cert_pem + "trailing words\n"
    assert tls.parse_certificates(data, "f") == [leaf.cert]


def test_no_certificate_names_the_field() -> None:
    with pytest.raises(tls.CertificateError) as exc:
        tls.parse_certificates("not pem at all", "spec.tls.caCertificate")
    assert exc.value.field == "spec.tls.caCertificate"
    assert str(exc.value).startswith("spec.tls.caCertificate: no PEM certificate found")


def test_bad_base64_is_refused() -> None:
    data = "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n"
    with pytest.raises(tls.CertificateError, match="not valid base64"):
        tls.parse_certificates(data, "spec.tls.certificate")


def test_certificate_body_that_is_not_der_is_refused() -> None:
    data = "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n"
    with pytest.raises(tls.CertificateError, match="certificate 1 cannot be parsed"):
        tls.parse_certificates(data, "spec.tls.certificate")


def test_unrecognized_block_type_is_refused(leaf: Issued) -> None:
    data = leaf.cert_pem.replace("CERTIFICATE", "X509 CRL")
    with pytest.raises(tls.CertificateError, match="unrecognized PEM block X509 CRL"):
        tls.parse_certificates(data, "spec.tls.certificate")


@pytest.mark.parametrize("traditional", [False, True], ids=["pkcs8", "traditional"])
@pytest.mark.parametrize("make", [ec_key, rsa_key], ids=["ec", "rsa"])
def test_private_key_formats(make: object, traditional: bool) -> None:
    key = make()  # type: ignore[operator]
    (parsed,) = tls.parse_private_keys(key_pem(key, traditional=traditional), "spec.tls.key")
    assert parsed.private_numbers() == key.private_numbers()


def test_no_private_key() -> None:
    with pytest.raises(tls.CertificateError, match="no PEM private key found"):
        tls.parse_private_keys("", "spec.tls.key")


def test_two_private_keys_are_read_in_order() -> None:
    """As OpenShift's router: several keys are allowed; the first one is served."""
    first, second = ec_key(), ec_key()
    keys = tls.parse_private_keys(key_pem(first) + key_pem(second), "spec.tls.key")
    assert [k.private_numbers() for k in keys] == [  # type: ignore[union-attr]
        first.private_numbers(),
        second.private_numbers(),
    ]


def test_encrypted_private_key_is_refused() -> None:
    from cryptography.hazmat.primitives import serialization

    pem = (
        ec_key()
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
        .decode()
    )
    with pytest.raises(tls.CertificateError, match="encrypted"):
        tls.parse_private_keys(pem, "spec.tls.key")


def test_certificate_field_may_carry_its_key(leaf: Issued) -> None:
    certs, keys = tls.split_certificates_and_keys(leaf.cert_pem + leaf.key_pem, "f")
    assert certs == [leaf.cert]
    assert len(keys) == 1 and tls.key_matches_certificate(keys[0], leaf.cert)


# ---------------------------------------------------------------- key pairs, chains, algorithms


def test_key_matches_its_certificate_only(leaf: Issued, ca: Issued) -> None:
    assert tls.key_matches_certificate(leaf.key, leaf.cert)
    assert not tls.key_matches_certificate(ca.key, leaf.cert)
    assert not tls.key_matches_certificate(ec_key(), leaf.cert)


def test_chain_to_the_given_ca(leaf: Issued, ca: Issued) -> None:
    assert tls_chain.verify_error(leaf.cert, [ca.cert], NOW) is None


def test_chain_through_an_intermediate(ca: Issued) -> None:
    inter = issue("intermediate CA", issuer=ca, ca=True)
    server = issue("www.example.com", issuer=inter)
    assert tls_chain.verify_error(server.cert, [inter.cert, ca.cert], NOW) is None
    missing = tls_chain.verify_error(server.cert, [ca.cert], NOW)  # the intermediate is missing
    assert missing == tls_chain.GoError("x509: certificate signed by unknown authority")


def test_a_leaf_is_no_issuer(ca: Issued) -> None:
    """A non-CA certificate cannot sign for others, even with the right key."""
    not_ca = issue("not a CA", issuer=ca, ca=False)
    forged = issue("www.example.com", issuer=not_ca)
    err = tls_chain.verify_error(forged.cert, [not_ca.cert, ca.cert], NOW)
    assert err is not None and not err.expired
    assert err.text == (
        'x509: certificate signed by unknown authority (possibly because of "x509: invalid '
        'signature: parent certificate cannot sign this kind of certificate" while trying to '
        'verify candidate authority certificate "not a CA")'
    )


def test_wrong_ca_is_refused(leaf: Issued) -> None:
    other = issue("some other CA", ca=True)
    assert tls_chain.chain_problem(leaf.cert, [other.cert], NOW) == (
        "error verifying certificate: x509: certificate signed by unknown authority"
    )


def test_expired_chain_is_tolerated() -> None:
    old_ca = issue("old CA", ca=True, not_before=EXPIRED_FROM, not_after=EXPIRED_UNTIL)
    old_leaf = issue(
        "old.example.com", issuer=old_ca, not_before=EXPIRED_FROM, not_after=EXPIRED_UNTIL
    )
    err = tls_chain.verify_error(old_leaf.cert, [old_ca.cert], NOW)
    assert err == tls_chain.GoError(
        "x509: certificate has expired or is not yet valid: "
        "current time 2026-06-01T12:00:00Z is after 2001-01-01T00:00:00Z",
        expired=True,
    )
    assert tls_chain.chain_problem(old_leaf.cert, [old_ca.cert], NOW) is None


def test_self_signed_detection(leaf: Issued, ca: Issued) -> None:
    assert tls.is_self_signed(ca.cert)
    assert not tls.is_self_signed(leaf.cert)


def test_weak_signatures_are_named(rsa_ca: Issued) -> None:
    assert tls.weak_signature(issue_weak("a", rsa_ca, digest="sha1").cert) == "SHA1"
    assert tls.weak_signature(issue_weak("b", rsa_ca, digest="md5").cert) == "MD5"
    assert tls.weak_signature(issue("c", issuer=rsa_ca).cert) is None


def test_ca_signed_sha1_is_refused(rsa_ca: Issued) -> None:
    weak = issue_weak("www.example.com", rsa_ca, digest="sha1")
    with pytest.raises(tls.CertificateError) as exc:
        tls.check_signature_algorithms([weak.cert], "spec.tls.certificate")
    assert "router does not support CA-signed certificates using SHA1" in str(exc.value)


def test_ca_signed_md5_is_refused(rsa_ca: Issued) -> None:
    weak = issue_weak("www.example.com", rsa_ca, digest="md5")
    with pytest.raises(tls.CertificateError, match="using MD5"):
        tls.check_signature_algorithms([weak.cert], "spec.tls.certificate")


def test_sha1_certificate_posing_as_self_signed_is_refused(rsa_ca: Issued) -> None:
    """Same issuer and subject name, but signed by another (RSA) key: not self-signed."""
    impostor_ca = issue("Impostor", ca=True, key=rsa_ca.key)
    fake = issue_weak("Impostor", impostor_ca, digest="sha1")  # the leaf has an EC key
    assert fake.cert.issuer == fake.cert.subject
    assert not tls.is_self_signed(fake.cert)
    with pytest.raises(tls.CertificateError, match="using SHA1"):
        tls.check_signature_algorithms([fake.cert], "spec.tls.certificate")


def test_self_signed_sha1_is_allowed() -> None:
    root = issue_weak("old root", digest="sha1", ca=True)
    tls.check_signature_algorithms([root.cert], "spec.tls.caCertificate")


# ---------------------------------------------------------------- validate_route_tls


def test_complete_edge_config_is_usable(leaf: Issued, ca: Issued) -> None:
    t = edge(certificate=leaf.cert_pem, key=leaf.key_pem, ca_certificate=ca.cert_pem)
    assert tls.validate_route_tls(t) is None
    assert tls.route_tls_problems(t) == []


def test_edge_without_material_uses_the_default_certificate() -> None:
    assert tls.validate_route_tls(edge()) is None


def test_key_mismatch(leaf: Issued) -> None:
    t = edge(certificate=leaf.cert_pem, key=key_pem(ec_key()))
    msg = tls.validate_route_tls(t)
    assert msg == "spec.tls.key: tls: private key does not match public key"
    rsa_msg = tls.validate_route_tls(edge(certificate=leaf.cert_pem, key=key_pem(rsa_key())))
    assert rsa_msg == "spec.tls.key: tls: private key type does not match public key type"


def test_wrong_ca_is_named(leaf: Issued) -> None:
    other = issue("other CA", ca=True)
    t = edge(certificate=leaf.cert_pem, key=leaf.key_pem, ca_certificate=other.cert_pem)
    msg = tls.validate_route_tls(t)
    assert msg is not None
    assert msg == (
        "spec.tls.certificate: error verifying certificate: "
        "x509: certificate signed by unknown authority"
    )


def test_ca_signed_sha1_certificate_is_refused(rsa_ca: Issued) -> None:
    weak = issue_weak("www.example.com", rsa_ca, digest="sha1")
    t = edge(certificate=weak.cert_pem, key=weak.key_pem, ca_certificate=rsa_ca.cert_pem)
    msg = tls.validate_route_tls(t)
    assert msg is not None
    assert msg.startswith(
        "spec.tls.certificate: router does not support CA-signed certificates using SHA1"
    )


def test_sha1_intermediate_in_ca_field_is_refused(rsa_ca: Issued) -> None:
    inter = issue_weak("intermediate", rsa_ca, digest="sha1", ca=True)
    t = edge(ca_certificate=cert_pem(inter.cert, rsa_ca.cert))
    msg = tls.validate_route_tls(t)
    assert msg is not None and msg.startswith("spec.tls.caCertificate: router does not support")


def test_sha1_self_signed_root_as_ca_is_accepted() -> None:
    root = issue_weak("legacy root", digest="sha1", ca=True)
    server = issue("www.example.com", issuer=root)
    t = edge(certificate=server.cert_pem, key=server.key_pem, ca_certificate=root.cert_pem)
    assert tls.validate_route_tls(t) is None


def test_expired_certificate_is_accepted() -> None:
    old_ca = issue("old CA", ca=True, not_before=EXPIRED_FROM, not_after=EXPIRED_UNTIL)
    old = issue("old.example.com", issuer=old_ca, not_before=EXPIRED_FROM, not_after=EXPIRED_UNTIL)
    t = edge(certificate=old.cert_pem, key=old.key_pem, ca_certificate=old_ca.cert_pem)
    assert tls.validate_route_tls(t) is None


def test_key_inside_certificate_field_is_accepted(leaf: Issued) -> None:
    assert tls.validate_route_tls(edge(certificate=leaf.cert_pem + leaf.key_pem)) is None


def test_certificate_without_key(leaf: Issued) -> None:
    assert (
        tls.validate_route_tls(edge(certificate=leaf.cert_pem)) == "spec.tls.key: no key specified"
    )


def test_unparsable_key_is_named(leaf: Issued) -> None:
    msg = tls.validate_route_tls(edge(certificate=leaf.cert_pem, key="garbage"))
    assert msg is not None and msg.startswith("spec.tls.key: no PEM private key found")


def test_reencrypt_destination_ca_is_checked(leaf: Issued) -> None:
    t = TLSConfig(termination="reencrypt", destination_ca_certificate="nope")
    msg = tls.validate_route_tls(t)
    assert msg is not None and msg.startswith("spec.tls.destinationCACertificate: no PEM")
    good = TLSConfig(termination="reencrypt", destination_ca_certificate=leaf.cert_pem)
    assert tls.validate_route_tls(good) is None


def test_passthrough_has_nothing_to_check() -> None:
    assert tls.validate_route_tls(TLSConfig(termination="passthrough")) is None


def test_all_problems_are_listed_in_field_order(leaf: Issued) -> None:
    t = edge(ca_certificate="x", certificate=leaf.cert_pem, key=key_pem(ec_key()))
    t2 = TLSConfig(
        termination="reencrypt",
        ca_certificate="x",
        certificate=leaf.cert_pem,
        key=key_pem(ec_key()),
        destination_ca_certificate="y",
    )
    # As upstream, an unusable caCertificate leaves an empty pool that the certificate
    # is still verified against, and the key is checked whatever the certificate gave.
    assert [p.field for p in tls.route_tls_problems(t)] == [
        "spec.tls.caCertificate",
        "spec.tls.certificate",
        "spec.tls.key",
    ]
    assert [p.field for p in tls.route_tls_problems(t2)] == [
        "spec.tls.caCertificate",
        "spec.tls.certificate",
        "spec.tls.key",
        "spec.tls.destinationCACertificate",
    ]
