"""The API server's credentials: a CA, a serving certificate and the admin token.

Made on first start in the state directory (files 0600, directory 0700) and
reused afterwards, so a kubeconfig handed out once keeps working. The serving
certificate is made again when it no longer names the listen address, is
near its end, or was not signed by the CA on disk.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from shiftnet.private_files import ensure_private_dir, write_private_file

log = logging.getLogger(__name__)

CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE = dt.timedelta(days=30)
ADMIN_USER = "shiftnet-admin"


@dataclass(frozen=True)
class Credentials:
    ca_pem: bytes
    cert_path: Path
    key_path: Path
    token: str


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _make_ca() -> tuple[bytes, bytes]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shiftnet-ca")])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def serving_names(listen_host: str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the serving certificate must carry."""
    dns = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
    ips = ["127.0.0.1", "::1"]
    addr = ipaddress.ip_address(listen_host)
    if not addr.is_unspecified and str(addr) not in ips:
        ips.append(str(addr))
    return dns, ips


def _make_serving(
    ca_cert: x509.Certificate, ca_key_pem: bytes, listen_host: str
) -> tuple[bytes, bytes]:
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    dns, ips = serving_names(listen_host)
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shiftnet-apiserver")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=SERVING_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _serving_ok(cert_path: Path, ca_cert: x509.Certificate, listen_host: str) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (OSError, ValueError):
        return False
    if cert.issuer != ca_cert.subject or cert.not_valid_after_utc - RENEW_BEFORE < _now():
        return False
    try:
        cert.verify_directly_issued_by(ca_cert)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, x509.ExtensionNotFound, InvalidSignature):
        return False
    have = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    return set(serving_names(listen_host)[1]) <= have


def ensure_credentials(pki_dir: Path, listen_host: str) -> Credentials:
    """Load the CA, serving certificate and admin token, making what is missing."""
    ensure_private_dir(pki_dir)
    ca_crt, ca_key = pki_dir / "ca.crt", pki_dir / "ca.key"
    if not (ca_crt.exists() and ca_key.exists()):
        cert_pem, key_pem = _make_ca()
        write_private_file(ca_key, key_pem)
        write_private_file(ca_crt, cert_pem)
        log.info("made the API server CA path=%s", ca_crt)
    ca_pem = ca_crt.read_bytes()
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    crt, key = pki_dir / "serving.crt", pki_dir / "serving.key"
    if not (key.exists() and _serving_ok(crt, ca_cert, listen_host)):
        cert_pem, key_pem = _make_serving(ca_cert, ca_key.read_bytes(), listen_host)
        write_private_file(key, key_pem)
        write_private_file(crt, cert_pem)
        log.info("made the API serving certificate path=%s listen=%s", crt, listen_host)
    token_path = pki_dir / "admin.token"
    if not token_path.exists():
        write_private_file(token_path, secrets.token_urlsafe(32) + "\n")
    token = token_path.read_text().strip()
    return Credentials(ca_pem=ca_pem, cert_path=crt, key_path=key, token=token)
