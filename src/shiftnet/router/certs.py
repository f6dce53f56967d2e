"""The router's default certificate: the operator's, or one the router makes for itself.

Why: edge and re-encrypt routes without their own certificate, and clients
that send no SNI, are served the default certificate. OpenShift's router
generates a self-signed one when ``DEFAULT_CERTIFICATE_PATH`` is unset; so do
we, once, kept in the work directory so restarts (and a second replica on the
same directory) present the same certificate instead of a new one each time.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from shiftnet.errors import ConfigError
from shiftnet.private_files import ensure_private_dir, tighten_private_file, write_private_file

log = logging.getLogger(__name__)

DEFAULT_CERT_NAME = "default-certificate.pem"
VALID_DAYS = 825


def _usable(path: Path) -> bool:
    try:
        data = path.read_bytes()
        cert = x509.load_pem_x509_certificate(data)
        serialization.load_pem_private_key(data, password=None)
    except (OSError, ValueError):
        return False
    return cert.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=1)


def self_signed_pem(common_name: str) -> bytes:
    """A fresh self-signed certificate and its key, concatenated (HAProxy's ``crt`` format)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def default_certificate(configured: str | None, work_dir: Path, common_name: str) -> Path:
    """The path of the PEM (certificate + key) the router serves by default."""
    if configured:
        path = Path(configured)
        if not _usable(path):
            raise ConfigError(
                f"DEFAULT_CERTIFICATE_PATH={configured!r} is not a readable PEM holding a "
                "certificate and its private key"
            )
        return path.resolve()
    path = Path(work_dir).resolve() / DEFAULT_CERT_NAME
    if _usable(path):
        tighten_private_file(path)  # an older version may have left it readable
        return path
    pem = self_signed_pem(common_name)
    ensure_private_dir(path.parent)
    write_private_file(path, pem)
    log.info("generated a self-signed default certificate path=%s cn=%s", path, common_name)
    return path
