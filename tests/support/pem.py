"""PEM material for TLS validation tests, made on the fly with fixed dates (no clocks).

Besides ordinary CA/leaf pairs this can make what ``cryptography`` refuses to
sign: a certificate signed with SHA1 (by rewriting a SHA256 certificate's
algorithm identifiers and signing its TBS bytes with SHA1).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import NameOID

VALID_FROM = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
VALID_UNTIL = dt.datetime(2040, 1, 1, tzinfo=dt.UTC)
EXPIRED_FROM = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
EXPIRED_UNTIL = dt.datetime(2001, 1, 1, tzinfo=dt.UTC)

# DER of sha256WithRSAEncryption; the weak OIDs below have the same length, so a
# byte swap keeps the DER valid.
_SHA256_WITH_RSA = bytes.fromhex("06092a864886f70d01010b")

Key = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@functools.cache
def rsa_key(slot: int = 0) -> rsa.RSAPrivateKey:
    """One RSA key per ``slot``, made once (RSA generation is slow; certificates differ anyway)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_pem(key: Key, *, traditional: bool = False) -> str:
    fmt = (
        serialization.PrivateFormat.TraditionalOpenSSL
        if traditional
        else serialization.PrivateFormat.PKCS8
    )
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()).decode()


def cert_pem(*certs: x509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


@dataclass(frozen=True)
class Issued:
    cert: x509.Certificate
    key: Key

    @property
    def cert_pem(self) -> str:
        return cert_pem(self.cert)

    @property
    def key_pem(self) -> str:
        return key_pem(self.key)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def issue(
    cn: str,
    *,
    issuer: Issued | None = None,
    ca: bool = False,
    key: Key | None = None,
    not_before: dt.datetime = VALID_FROM,
    not_after: dt.datetime = VALID_UNTIL,
) -> Issued:
    """A certificate for ``cn``: self-signed when ``issuer`` is None, else signed by it."""
    key = key or ec_key()
    signer: CertificateIssuerPrivateKeyTypes = issuer.key if issuer else key
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer.cert.subject if issuer else _name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    return Issued(builder.sign(signer, hashes.SHA256()), key)


_WEAK = {
    "sha1": (bytes.fromhex("06092a864886f70d010105"), hashes.SHA1()),
    "md5": (bytes.fromhex("06092a864886f70d010104"), hashes.MD5()),
}


def issue_weak(
    cn: str, issuer: Issued | None = None, *, digest: str = "sha1", ca: bool = False
) -> Issued:
    """A certificate signed with ``digest`` (sha1/md5) by an RSA ``issuer`` (or by itself).

    ``cryptography`` will not sign with these, so a SHA256 certificate's
    algorithm identifiers are rewritten and its TBS bytes signed again.
    """
    oid, algorithm = _WEAK[digest]
    own_key = rsa_key(1) if issuer is None else None
    plain = issue(cn, issuer=issuer, ca=ca, key=own_key)
    signer = issuer.key if issuer is not None else plain.key
    if not isinstance(signer, rsa.RSAPrivateKey):
        raise TypeError("issue_weak needs an RSA signer")
    der = plain.cert.public_bytes(serialization.Encoding.DER)
    assert der.count(_SHA256_WITH_RSA) == 2  # TBS signature field and outer algorithm
    rewritten = x509.load_der_x509_certificate(der.replace(_SHA256_WITH_RSA, oid))
    signature = signer.sign(rewritten.tbs_certificate_bytes, padding.PKCS1v15(), algorithm)
    old = rewritten.signature
    assert len(signature) == len(old)
    body = rewritten.public_bytes(serialization.Encoding.DER)
    return Issued(x509.load_der_x509_certificate(body[: -len(old)] + signature), plain.key)
