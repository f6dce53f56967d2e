"""Pure PEM checks for Route TLS material: parse, match key to certificate, verify chains.

The API layer only asks "does this field parse?"; the router's admission asks
the deeper questions (key matches, chains to the given CA, no SHA1/MD5 on a
CA-signed certificate) and turns a failure into ``ExtendedValidationFailed``.
Expiry is never an error in itself: a router serves an expired certificate and
lets the client decide, as OpenShift does; but the time decides which chain
checks run (:mod:`shiftnet.api.tls_chain`), so the caller passes it in. No
clocks, no I/O.

Every failure is a :class:`CertificateError` whose text names the field.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import SignatureAlgorithmOID

from shiftnet.api.route import TLSConfig
from shiftnet.api.tls_chain import chain_problem
from shiftnet.errors import ShiftnetError

CERTIFICATE_FIELD = "spec.tls.certificate"
KEY_FIELD = "spec.tls.key"
CA_FIELD = "spec.tls.caCertificate"
DESTINATION_CA_FIELD = "spec.tls.destinationCACertificate"

_ARMOR_RE = re.compile(r"-----(BEGIN|END) ([A-Z0-9]+(?: [A-Z0-9]+)*)-----")
_BASE64_RE = re.compile(r"[A-Za-z0-9+/=]+")
_CERT_TYPES = {"CERTIFICATE"}
# The labels OpenSSL (so HAProxy) loads a private key from.
_WRITABLE_KEY_TYPES = {"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"}
# The labels a route's key is read from, whatever encoding (PKCS#8, PKCS#1, SEC1) the
# block holds, as OpenShift's router reads them; "ECDSA PRIVATE KEY" is an old alias
# OpenSSL does not know. Keys are written re-encoded (:func:`serving_pem`).
_KEY_TYPES = _WRITABLE_KEY_TYPES | {"ECDSA PRIVATE KEY"}
_IGNORED_TYPES = {"EC PARAMETERS"}  # skipped, as OpenShift's router drops them
PEM_TYPES = frozenset(_CERT_TYPES | _WRITABLE_KEY_TYPES | _IGNORED_TYPES)  # what is written

# Signature algorithms a CA-signed certificate may not use (HAProxy/OpenSSL refuse them).
_WEAK_SIGNATURES: dict[x509.ObjectIdentifier, str] = {
    SignatureAlgorithmOID.RSA_WITH_SHA1: "SHA1",
    SignatureAlgorithmOID.ECDSA_WITH_SHA1: "SHA1",
    SignatureAlgorithmOID.DSA_WITH_SHA1: "SHA1",
    SignatureAlgorithmOID.RSA_WITH_MD5: "MD5",
    x509.ObjectIdentifier("1.2.840.113549.1.1.2"): "MD2",  # md2WithRSAEncryption
}


# Signature algorithm OID families and the public key type that can make them.
_SIGNATURE_KEY_TYPES: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("1.2.840.113549.1.1.", rsa.RSAPublicKey),  # md2/md5/sha*WithRSAEncryption, RSASSA-PSS
    ("1.2.840.10045.4.", ec.EllipticCurvePublicKey),  # ecdsa-with-*
    ("1.2.840.10040.4.3", dsa.DSAPublicKey),  # dsa-with-sha1
    ("2.16.840.1.101.3.4.3.", (dsa.DSAPublicKey, ec.EllipticCurvePublicKey, rsa.RSAPublicKey)),
    ("1.3.101.112", ed25519.Ed25519PublicKey),
    ("1.3.101.113", ed448.Ed448PublicKey),
)


class CertificateError(ShiftnetError):
    """TLS material in one field is unusable; ``str()`` is one sentence naming the field."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclass(frozen=True)
class PemBlock:
    type: str
    der: bytes


def pem_blocks(data: str, field: str) -> list[PemBlock]:
    """Split PEM text into blocks, refusing anything that could not be written back whole.

    This is the one PEM grammar: the router's PEM writer
    (``router/haproxy/escape.pem``) reads its input with this function too, so
    what validation accepts is exactly what reaches HAProxy, re-encoded. Lines
    end in LF or CRLF; spaces and tabs around a line are ignored. Text outside
    blocks is ignored (as OpenSSL and Go's ``pem.Decode`` ignore it) unless it
    looks like armor (a stray or malformed BEGIN/END line). Inside a block only
    base64 and blank lines may appear: RFC 1421 headers (``Proc-Type:``,
    ``DEK-Info:``, ...) are refused, because HAProxy cannot load such a block
    and rewriting it without them would change what the user gave.
    """
    blocks: list[PemBlock] = []
    label: str | None = None
    body: list[str] = []
    for raw in data.split("\n"):
        line = raw.removesuffix("\r").strip(" \t")
        armor = _ARMOR_RE.fullmatch(line)
        if label is None:
            if armor is not None and armor[1] == "BEGIN":
                label, body = armor[2], []
            elif "-----BEGIN" in line or "-----END" in line:
                raise CertificateError(field, "holds a malformed or unmatched PEM BEGIN/END line")
            continue
        if armor is not None and armor[1] == "END" and armor[2] == label:
            blocks.append(PemBlock(label, _block_der(label, body, field)))
            label = None
        elif "-----" in line:
            raise CertificateError(field, f"PEM block {label} has no matching END line")
        elif ":" in line:
            raise CertificateError(field, _header_problem(label, line))
        elif line and not _BASE64_RE.fullmatch(line):
            raise CertificateError(field, f"PEM block {label} is not valid base64")
        elif line:
            body.append(line)
    if label is not None:
        raise CertificateError(field, f"PEM block {label} has no matching END line")
    return blocks


def _block_der(label: str, body: list[str], field: str) -> bytes:
    if not body:
        raise CertificateError(field, f"PEM block {label} is empty")
    try:
        return base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError):
        raise CertificateError(field, f"PEM block {label} is not valid base64") from None


def _header_problem(label: str, line: str) -> str:
    """Why a block with an RFC 1421 header line is refused (one sentence)."""
    name = line.split(":", 1)[0].strip()
    if name.lower() == "proc-type" and "ENCRYPTED" in line.upper():
        return "the private key is encrypted (Proc-Type: 4,ENCRYPTED); give it unencrypted"
    shown = name if re.fullmatch(r"[A-Za-z0-9-]{1,40}", name) else "a header"
    return (
        f"PEM block {label} carries RFC 1421 header lines ({shown}), which HAProxy "
        "cannot load; remove them"
    )


def _load_certificate(block: PemBlock, field: str, index: int) -> x509.Certificate:
    try:
        return x509.load_der_x509_certificate(block.der)
    except ValueError as exc:
        raise CertificateError(field, f"certificate {index + 1} cannot be parsed: {exc}") from None


def _load_key(block: PemBlock, field: str) -> PrivateKeyTypes:
    """The key in a key block, whatever its label says of the encoding (as OpenShift
    tries PKCS#8, PKCS#1 and SEC1 in turn)."""
    try:
        key = serialization.load_der_private_key(block.der, password=None)
    except TypeError:
        raise CertificateError(field, "the private key is encrypted; give it unencrypted") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise CertificateError(field, f"private key cannot be parsed: {exc}") from None
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        # OpenShift's router re-encodes route keys as PKCS#1 or SEC1 and so takes
        # RSA and ECDSA keys only; an Ed25519 key is refused there too.
        name = "Ed25519" if isinstance(key, ed25519.Ed25519PrivateKey) else type(key).__name__
        raise CertificateError(
            field, f"private key type {name} is not supported (RSA or ECDSA keys only)"
        )
    return key


def _checked_blocks(data: str, field: str) -> list[PemBlock]:
    blocks = pem_blocks(data, field)
    for b in blocks:
        if b.type == "ENCRYPTED PRIVATE KEY":
            raise CertificateError(field, "the private key is encrypted; give it unencrypted")
        if b.type not in _CERT_TYPES | _KEY_TYPES | _IGNORED_TYPES:
            raise CertificateError(field, f"unrecognized PEM block {b.type}")
    return blocks


def split_certificates_and_keys(
    data: str, field: str
) -> tuple[list[x509.Certificate], list[PrivateKeyTypes]]:
    """Parse PEM text that may hold certificates and private keys, each in order."""
    certs: list[x509.Certificate] = []
    keys: list[PrivateKeyTypes] = []
    for block in _checked_blocks(data, field):
        if block.type in _CERT_TYPES:
            certs.append(_load_certificate(block, field, len(certs)))
        elif block.type in _KEY_TYPES:
            keys.append(_load_key(block, field))
    return certs, keys


def parse_certificates(data: str, field: str) -> list[x509.Certificate]:
    """All certificates in ``data`` (at least one), in order. Key blocks are allowed and skipped."""
    certs, _ = split_certificates_and_keys(data, field)
    if not certs:
        raise CertificateError(
            field, "no PEM certificate found (expected -----BEGIN CERTIFICATE-----)"
        )
    return certs


def parse_ca_certificates(data: str, field: str) -> list[x509.Certificate]:
    """A CA bundle: certificates only (a private key here would be written where it
    does not belong, and HAProxy would load it as the route's key)."""
    if any(b.type in _KEY_TYPES for b in _checked_blocks(data, field)):
        raise CertificateError(field, "holds a private key; this field takes certificates only")
    return parse_certificates(data, field)


def parse_private_keys(data: str, field: str) -> list[PrivateKeyTypes]:
    """The private keys in ``data`` (RSA or EC; PKCS#1, SEC1 or PKCS#8), at least one.

    A certificate in the key field is refused, as OpenShift's router refuses
    it (only private keys may be there).
    """
    certs, keys = split_certificates_and_keys(data, field)
    if certs:
        raise CertificateError(
            field, "field contains invalid types CERTIFICATE, expecting only PRIVATE KEY"
        )
    if not keys:
        raise CertificateError(
            field, "no PEM private key found (expected -----BEGIN PRIVATE KEY-----)"
        )
    return keys


def _key_block(key: PrivateKeyTypes) -> PemBlock:
    """A key as OpenShift's router writes it: RSA as PKCS#1, ECDSA as SEC1."""
    label = "RSA PRIVATE KEY" if isinstance(key, rsa.RSAPrivateKey) else "EC PRIVATE KEY"
    der = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return PemBlock(label, der)


def _pem_text(blocks: list[PemBlock]) -> str:
    out: list[str] = []
    for block in blocks:
        b64 = base64.b64encode(block.der).decode()
        body = "\n".join(b64[i : i + 64] for i in range(0, len(b64), 64))
        out.append(f"-----BEGIN {block.type}-----\n{body}\n-----END {block.type}-----\n")
    return "".join(out)


def serving_pem(certificate: str, key: str | None, ca_certificate: str | None) -> str:
    """What HAProxy is given for a route, as OpenShift's router builds it: the
    certificates of ``certificate``, the first private key (one inside
    ``certificate`` first, then ``key``), re-encoded, then the certificates of
    ``ca_certificate``. Parameter blocks and later keys are left out. The
    material must have passed :func:`route_tls_problems`.
    """
    certs: list[PemBlock] = []
    keys: list[PemBlock] = []
    for text, field in ((certificate, CERTIFICATE_FIELD), (key or "", KEY_FIELD)):
        for block in _checked_blocks(text, field):
            if block.type in _CERT_TYPES:
                certs.append(block)
            elif block.type in _KEY_TYPES and not keys:
                keys.append(_key_block(_load_key(block, field)))
    cas = [b for b in _checked_blocks(ca_certificate or "", CA_FIELD) if b.type in _CERT_TYPES]
    return _pem_text(certs + keys + cas)


def _public_der(key: object) -> bytes:
    if isinstance(
        key,
        rsa.RSAPublicKey
        | ec.EllipticCurvePublicKey
        | ed25519.Ed25519PublicKey
        | ed448.Ed448PublicKey
        | dsa.DSAPublicKey,
    ):
        return key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    return b""


def key_matches_certificate(key: PrivateKeyTypes, cert: x509.Certificate) -> bool:
    """True when ``key`` is the private half of ``cert``'s public key."""
    try:
        cert_pub = _public_der(cert.public_key())
    except (ValueError, UnsupportedAlgorithm):
        return False
    return bool(cert_pub) and cert_pub == _public_der(key.public_key())


def _key_identifier(cert: x509.Certificate, ext: type[x509.ExtensionType]) -> bytes | None:
    try:
        value = cert.extensions.get_extension_for_class(ext).value
    except x509.ExtensionNotFound:
        return None
    if isinstance(value, x509.SubjectKeyIdentifier):
        return value.digest
    if isinstance(value, x509.AuthorityKeyIdentifier):
        return value.key_identifier
    return None


def is_self_signed(cert: x509.Certificate) -> bool:
    """Issuer equals subject, the authority key id (if any) is its own key id, and
    the signature algorithm fits its own key type.

    This is the test OpenSSL uses to mark a certificate self-signed; such
    certificates (typically roots) are allowed to use SHA1.
    """
    if cert.issuer.public_bytes() != cert.subject.public_bytes():
        return False
    aki = _key_identifier(cert, x509.AuthorityKeyIdentifier)
    if aki is not None and aki != _key_identifier(cert, x509.SubjectKeyIdentifier):
        return False
    return _signature_fits_own_key(cert)


def _signature_fits_own_key(cert: x509.Certificate) -> bool:
    oid = cert.signature_algorithm_oid.dotted_string
    try:
        key = cert.public_key()
    except (ValueError, UnsupportedAlgorithm):
        return False
    for prefix, key_type in _SIGNATURE_KEY_TYPES:
        if oid.startswith(prefix):
            return isinstance(key, key_type)
    return False


def weak_signature(cert: x509.Certificate) -> str | None:
    """ "SHA1", "MD5" or "MD2" when the certificate is signed with one of those, else None."""
    return _WEAK_SIGNATURES.get(cert.signature_algorithm_oid)


def _describe(cert: x509.Certificate) -> str:
    return cert.subject.rfc4514_string() or "(empty subject)"


def check_signature_algorithms(certs: list[x509.Certificate], field: str) -> None:
    """Refuse CA-signed certificates signed with SHA1/MD5/MD2; self-signed ones may."""
    for cert in certs:
        weak = weak_signature(cert)
        if weak and not is_self_signed(cert):
            raise CertificateError(
                field,
                f"router does not support CA-signed certificates using {weak} "
                f'("{_describe(cert)}" is signed with {weak})',
            )


def check_key_pair(cert: x509.Certificate, key: PrivateKeyTypes, *, key_field: str) -> None:
    """Go's ``tls.X509KeyPair`` check, with its words (what OpenShift's router reports)."""
    if key_matches_certificate(key, cert):
        return
    try:
        public = cert.public_key()
    except (ValueError, UnsupportedAlgorithm):
        raise CertificateError(key_field, "tls: unknown public key algorithm") from None
    if isinstance(public, rsa.RSAPublicKey):
        same_type = isinstance(key, rsa.RSAPrivateKey)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        same_type = isinstance(key, ec.EllipticCurvePrivateKey)
    elif isinstance(public, ed25519.Ed25519PublicKey):
        same_type = isinstance(key, ed25519.Ed25519PrivateKey)
    else:
        raise CertificateError(key_field, "tls: unknown public key algorithm")
    reason = (
        "tls: private key does not match public key"
        if same_type
        else "tls: private key type does not match public key type"
    )
    raise CertificateError(key_field, reason)


def pem_parse_problem(data: str, field: str, *, expect: str) -> str | None:
    """For API validation: None if ``data`` parses as ``expect`` ("certificate" or "key").

    Otherwise the reason (without the field path, which the caller adds).
    """
    try:
        if expect == "key":
            parse_private_keys(data, field)
        elif field in (CA_FIELD, DESTINATION_CA_FIELD):
            parse_ca_certificates(data, field)
        else:
            parse_certificates(data, field)
    except CertificateError as exc:
        return exc.reason
    return None


def _certificate_and_key_problems(
    t: TLSConfig, ca_pool: list[x509.Certificate] | None, now: dt.datetime | None
) -> list[CertificateError]:
    """OpenShift's order: the certificate parses, uses no weak signature and (with a
    ``caCertificate``, ``ca_pool`` not None) verifies against it, expiry tolerated; then,
    whatever that found, the first private key (one inside ``certificate`` first, then
    ``key``) must be the certificate's (later keys are not served)."""
    out: list[CertificateError] = []
    field_keys: list[PrivateKeyTypes] = []
    if t.key:
        try:
            field_keys = parse_private_keys(t.key, KEY_FIELD)
        except CertificateError as err:
            out.append(err)
    if not t.certificate:
        return out
    try:
        certs, embedded_keys = split_certificates_and_keys(t.certificate, CERTIFICATE_FIELD)
        if not certs:
            raise CertificateError(CERTIFICATE_FIELD, "no PEM certificate found")
    except CertificateError as err:
        out.append(err)
        return out
    certificate_problem: list[CertificateError] = []
    try:
        check_signature_algorithms(certs, CERTIFICATE_FIELD)
        problem = chain_problem(certs[0], ca_pool, now) if ca_pool is not None else None
        if problem is not None:
            raise CertificateError(CERTIFICATE_FIELD, problem)
    except CertificateError as err:
        certificate_problem = [err]
    if out:  # the key field did not parse; nothing to match
        return certificate_problem + out
    keys = embedded_keys + field_keys
    if not keys:
        return [*certificate_problem, CertificateError(KEY_FIELD, "no key specified")]
    try:
        check_key_pair(certs[0], keys[0], key_field=KEY_FIELD)
    except CertificateError as err:
        out.append(err)
    return certificate_problem + out


def route_tls_problems(t: TLSConfig, now: dt.datetime | None = None) -> list[CertificateError]:
    """Everything the router refuses in a Route's TLS material, in OpenShift's order.

    These are the checks behind a router's ``ExtendedValidationFailed``: each
    PEM field parses, the key matches the certificate, the certificate
    verifies against ``caCertificate`` when one is given (Go's verifier at
    ``now``, an ``Expired`` outcome tolerated: :mod:`shiftnet.api.tls_chain`),
    and no CA-signed certificate uses SHA1/MD5 (self-signed roots may).
    ``destinationCACertificate`` is parsed and its signatures checked, never
    its dates. ``now`` None means no clock: every certificate counts as within
    its dates. Passthrough routes carry no material, so there is nothing to check.
    """
    if t.termination == "passthrough":
        return []
    out: list[CertificateError] = []
    ca_pool: list[x509.Certificate] | None = None
    if t.ca_certificate:
        ca_pool = []  # as upstream, verification runs even when the CA field is unusable
        try:
            ca_pool = parse_ca_certificates(t.ca_certificate, CA_FIELD)
            check_signature_algorithms(ca_pool, CA_FIELD)
        except CertificateError as err:
            out.append(err)
    out += _certificate_and_key_problems(t, ca_pool, now)
    if t.destination_ca_certificate:
        try:
            dest = parse_ca_certificates(t.destination_ca_certificate, DESTINATION_CA_FIELD)
            check_signature_algorithms(dest, DESTINATION_CA_FIELD)
        except CertificateError as err:
            out.append(err)
    return out


def validate_route_tls(t: TLSConfig, now: dt.datetime | None = None) -> str | None:
    """The router admission's question: None when the TLS material is usable, else
    one sentence naming the field (``spec.tls.key: tls: private key does not match ...``)."""
    problems = route_tls_problems(t, now)
    return str(problems[0]) if problems else None
