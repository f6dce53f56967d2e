"""Which route certificates OpenSSL refuses to load, found before a runtime command is sent."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.support.pem import issue

from shiftnet.router.haproxy.cert_load import loads, unloadable

GOOD = issue("good.example.com")
WEAK = issue("weak.example.com", key=rsa.generate_private_key(65537, 1024))


def pem(cert: str, key: str) -> bytes:
    return (cert + key).encode()


def test_a_weak_key_is_refused_and_a_good_certificate_loads() -> None:
    assert loads(pem(GOOD.cert_pem, GOOD.key_pem))
    assert not loads(pem(WEAK.cert_pem, WEAK.key_pem))
    assert not loads(pem(GOOD.cert_pem, WEAK.key_pem))  # key of another certificate
    assert not loads(GOOD.cert_pem.encode())  # no key


def test_an_encrypted_key_is_refused_without_asking_for_a_password() -> None:
    key = GOOD.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    ).decode()
    assert not loads(pem(GOOD.cert_pem, key))


def test_only_new_or_changed_route_certificates_are_checked() -> None:
    weak = pem(WEAK.cert_pem, WEAK.key_pem)
    good = pem(GOOD.cert_pem, GOOD.key_pem)
    old = {"certs/a.pem": weak, "certs/b.pem": good, "ca/x.pem": b"not a cert"}
    assert unloadable(old, dict(old)) == []  # loaded already: HAProxy is not asked again
    new = {**old, "certs/b.pem": weak, "certs/c.pem": weak, "certs/d.pem": good}
    assert unloadable(old, new) == ["certs/b.pem", "certs/c.pem"]
