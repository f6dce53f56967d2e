"""external_certs.resolve: a route naming a Secret, read as a route with that certificate,
or refused with OpenShift's reason and a message that names the Secret."""

from __future__ import annotations

from tests.support import routes as f
from tests.support.tls import TestCA

from shiftnet.api import Route, Secret
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.external_certs import resolve, secret_of

CA = TestCA()
PAIR = CA.issue("a.example.com")


def ext_route(termination: str = "edge") -> Route:
    tls = {"termination": termination, "externalCertificate": {"name": "a-tls"}}
    return f.route("a", tls=tls)


def secret(kind: str = "kubernetes.io/tls", **data: str) -> Secret:
    values = data or {"tls.crt": PAIR.cert_pem, "tls.key": PAIR.key_pem}
    return Secret.model_validate(
        {"metadata": {"name": "a-tls", "namespace": "ns"}, "type": kind, "stringData": values}
    )


def test_the_secret_is_named_in_the_routes_namespace() -> None:
    assert secret_of(ext_route()) == ("ns", "a-tls")
    assert secret_of(f.route("b")) is None


def test_a_tls_secret_becomes_the_routes_certificate_and_is_admitted() -> None:
    resolved, refusal = resolve(ext_route(), secret())
    assert refusal is None
    assert resolved.spec.tls is not None
    assert resolved.spec.tls.certificate == PAIR.cert_pem
    assert resolved.spec.tls.key == PAIR.key_pem
    assert resolved.spec.tls.external_certificate is None
    config = RouterConfig(http_port=8080, https_port=8443)
    assert admit([resolved], [], config).decisions[("ns", "a")].admitted


def test_routes_without_a_reference_are_left_as_they_are() -> None:
    plain = f.route("b")
    assert resolve(plain, None) == (plain, None)


def test_missing_and_wrong_type_give_openshifts_reason() -> None:
    _, missing = resolve(ext_route(), None)
    assert missing is not None and missing.reason == "ExternalCertificateValidationFailed"
    assert missing.message == (
        'spec.tls.externalCertificate: Not found: "secrets \\"a-tls\\" not found"'
    )
    _, opaque = resolve(ext_route(), secret("Opaque"))
    assert opaque is not None and opaque.reason == "ExternalCertificateValidationFailed"
    assert opaque.message == (
        'spec.tls.externalCertificate: Invalid value: "a-tls": '
        'secret of type "kubernetes.io/tls" required'
    )


def test_bad_pem_and_a_foreign_key_are_extended_validation_failures_naming_the_key() -> None:
    bad = "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n"
    _, refusal = resolve(ext_route(), secret(**{"tls.crt": bad, "tls.key": PAIR.key_pem}))
    assert refusal is not None and refusal.reason == "ExtendedValidationFailed"
    assert refusal.message.startswith('spec.tls.externalCertificate: secret "a-tls" data[tls.crt]')
    other = CA.issue("a.example.com")
    _, mismatch = resolve(
        ext_route(), secret(**{"tls.crt": PAIR.cert_pem, "tls.key": other.key_pem})
    )
    assert mismatch is not None and mismatch.reason == "ExtendedValidationFailed"
    assert "data[tls.key]" in mismatch.message or "data[tls.crt]" in mismatch.message
    assert "PRIVATE KEY" not in mismatch.message


def test_binary_or_oversized_data_is_refused_without_decoding_it_as_pem() -> None:
    s = secret()
    s.data["tls.crt"] = "/////w=="  # bytes that are not ASCII
    _, refusal = resolve(ext_route(), s)
    assert refusal is not None and refusal.message == (
        'spec.tls.externalCertificate: secret "a-tls" data[tls.crt] is not PEM text: '
        "byte 0xff at offset 0 is not ASCII"
    )
    big = secret()
    big.data["pad"] = "QUFB" * (1024 * 1024 // 3 + 1)
    _, refusal = resolve(ext_route(), big)
    assert refusal is not None and "1048576 bytes" in refusal.message


def test_pem_with_a_non_ascii_character_names_the_byte_and_a_missing_key_says_so() -> None:
    accented = PAIR.cert_pem.replace("-----BEGIN", "é-----BEGIN", 1)
    _, refusal = resolve(ext_route(), secret(**{"tls.crt": accented, "tls.key": PAIR.key_pem}))
    assert refusal is not None and refusal.message == (
        'spec.tls.externalCertificate: secret "a-tls" data[tls.crt] is not PEM text: '
        "byte 0xc3 at offset 0 is not ASCII"
    )
    _, refusal = resolve(ext_route(), secret(**{"tls.crt": PAIR.cert_pem}))
    assert refusal is not None and refusal.message == (
        'spec.tls.externalCertificate: secret "a-tls" has no data[tls.key]'
    )
    s = secret()
    s.data["tls.key"] = "not base64!"
    _, refusal = resolve(ext_route(), s)
    assert refusal is not None and refusal.message.endswith('"a-tls" data[tls.key] is not base64')
