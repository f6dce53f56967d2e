"""Does a route's certificate chain to its ``caCertificate``? Decided as OpenShift's router decides.

OpenShift's extended validation runs Go's ``x509.Certificate.Verify`` on the
first certificate with the ``caCertificate`` certificates as both roots and
intermediates (the rest of the ``certificate`` bundle is not used), and then
ignores one kind of failure: ``CertificateInvalidError`` with reason
``Expired``, which Go reports for a certificate outside its validity window.
So the order of Go's checks decides what is served:

* the leaf's dates are checked first: an expired or not-yet-valid leaf ends
  the verification there, tolerated, and the chain is never looked at (a
  wrong CA is then served);
* a CA that signed the leaf but is outside its dates ends as ``Expired`` too
  (tolerated); a CA that did not sign it is "signed by unknown authority",
  naming the first signature failure, as Go's text does.

Everything here is pure: the caller passes the time (``now``; None means
"no clock": every certificate counts as within its dates). Error texts are
Go's, word for word, because they are what a user sees on the route.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

MAX_SIGNATURE_CHECKS = 100  # Go's maxChainSignatureChecks

_LEAF, _INTERMEDIATE, _ROOT = 0, 1, 2

# Go's names for a signature's public key algorithm, by signature OID prefix.
_SIGNATURE_KEY_ALGORITHMS = (
    ("1.2.840.113549.1.1.", "RSA"),
    ("1.2.840.10045.4.", "ECDSA"),
    ("1.2.840.10040.4.", "DSA"),
    ("2.16.840.1.101.3.4.3.", "DSA"),
    ("1.3.101.112", "Ed25519"),
)
_CONSTRAINT_VIOLATION = (
    "x509: invalid signature: parent certificate cannot sign this kind of certificate"
)


@dataclass(frozen=True)
class GoError:
    """One error as Go's verifier returns it; ``expired`` is reason ``Expired``."""

    text: str
    expired: bool = False


def verify_error(
    leaf: x509.Certificate, ca_pool: list[x509.Certificate], now: dt.datetime | None
) -> GoError | None:
    """What ``leaf.Verify`` returns with ``ca_pool`` as roots and intermediates (None: verified)."""
    pool = _dedup(ca_pool)
    problem = _is_valid(leaf, _LEAF, [], now)
    if problem is not None:
        return problem
    leaf_der = _der(leaf)
    if any(_der(c) == leaf_der for c in pool):
        chains = [[leaf]]
    else:
        chains, problem = _build_chains([leaf], pool, now, [0])
        if problem is not None:
            return problem
    if not any(_serves_tls(chain) for chain in chains):
        return GoError("x509: certificate specifies an incompatible key usage")
    return None


def chain_problem(
    leaf: x509.Certificate, ca_pool: list[x509.Certificate], now: dt.datetime | None
) -> str | None:
    """OpenShift's verdict: None when it serves ``leaf`` (verified, or only ``Expired``),
    else its message (``error verifying certificate: x509: ...``)."""
    problem = verify_error(leaf, ca_pool, now)
    if problem is None or problem.expired:
        return None
    return f"error verifying certificate: {problem.text}"


def _der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def _dedup(certs: list[x509.Certificate]) -> list[x509.Certificate]:
    """A Go CertPool holds each certificate once, in the order added."""
    seen: set[bytes] = set()
    out: list[x509.Certificate] = []
    for cert in certs:
        der = _der(cert)
        if der not in seen:
            seen.add(der)
            out.append(cert)
    return out


def _go_time(moment: dt.datetime) -> str:
    """RFC 3339 in UTC, seconds only, as Go's ``time.RFC3339`` prints a UTC time."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _basic_constraints(cert: x509.Certificate) -> x509.BasicConstraints | None:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        return None


def _is_valid(
    cert: x509.Certificate, kind: int, chain: list[x509.Certificate], now: dt.datetime | None
) -> GoError | None:
    """Go's ``isValid``: dates first, then what a CA at this place in the chain must be."""
    if now is not None:
        if now < cert.not_valid_before_utc:
            detail = f"current time {_go_time(now)} is before {_go_time(cert.not_valid_before_utc)}"
            return GoError(f"x509: certificate has expired or is not yet valid: {detail}", True)
        if now > cert.not_valid_after_utc:
            detail = f"current time {_go_time(now)} is after {_go_time(cert.not_valid_after_utc)}"
            return GoError(f"x509: certificate has expired or is not yet valid: {detail}", True)
    bc = _basic_constraints(cert)
    if kind == _INTERMEDIATE and (bc is None or not bc.ca):
        return GoError("x509: certificate is not authorized to sign other certificates")
    if bc is not None and bc.path_length is not None and len(chain) - 1 > bc.path_length:
        return GoError("x509: too many intermediates for path length constraint")
    return None


def _key_id(cert: x509.Certificate, ext: type[x509.ExtensionType]) -> bytes:
    try:
        value = cert.extensions.get_extension_for_class(ext).value
    except x509.ExtensionNotFound:
        return b""
    if isinstance(value, x509.SubjectKeyIdentifier):
        return value.digest
    if isinstance(value, x509.AuthorityKeyIdentifier):
        return value.key_identifier or b""
    return b""


def _potential_parents(
    child: x509.Certificate, pool: list[x509.Certificate]
) -> list[x509.Certificate]:
    """Pool certificates named as ``child``'s issuer, most plausible key ids first (as Go)."""
    issuer = child.issuer.public_bytes()
    aki = _key_id(child, x509.AuthorityKeyIdentifier)
    matching: list[x509.Certificate] = []
    one: list[x509.Certificate] = []
    mismatch: list[x509.Certificate] = []
    for cand in pool:
        if cand.subject.public_bytes() != issuer:
            continue
        ski = _key_id(cand, x509.SubjectKeyIdentifier)
        if ski == aki:
            matching.append(cand)
        elif not ski or not aki:
            one.append(cand)
        else:
            mismatch.append(cand)
    return matching + one + mismatch


def _san(cert: x509.Certificate) -> bytes | None:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return None
    return ext.value.public_bytes()


def _spki(cert: x509.Certificate) -> bytes:
    try:
        return cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    except (ValueError, UnsupportedAlgorithm):
        return _der(cert)  # unreadable key: never equal to another certificate's


def _has_public_key(cert: x509.Certificate) -> bool:
    try:
        cert.public_key()
    except (ValueError, UnsupportedAlgorithm):
        return False
    return True


def _already_in_chain(cand: x509.Certificate, chain: list[x509.Certificate]) -> bool:
    """Same subject, public key and SAN (Go's loop guard against cross-signatures)."""
    return any(
        cand.subject.public_bytes() == c.subject.public_bytes()
        and _spki(cand) == _spki(c)
        and _san(cand) == _san(c)
        for c in chain
    )


def _signature_key_algorithm(cert: x509.Certificate) -> str | None:
    oid = cert.signature_algorithm_oid.dotted_string
    return next(
        (name for prefix, name in _SIGNATURE_KEY_ALGORITHMS if oid.startswith(prefix)), None
    )


def _go_key_type(key: object) -> tuple[str, str]:
    """(Go's PublicKeyAlgorithm name, Go's type name) of a public key."""
    if isinstance(key, rsa.RSAPublicKey):
        return "RSA", "*rsa.PublicKey"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "ECDSA", "*ecdsa.PublicKey"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519", "ed25519.PublicKey"
    if isinstance(key, dsa.DSAPublicKey):
        return "DSA", "*dsa.PublicKey"
    return "", type(key).__name__


def _cannot_sign(parent: x509.Certificate) -> bool:
    """RFC 5280 as Go's ``CheckSignatureFrom`` applies it to the would-be issuer."""
    bc = _basic_constraints(parent)
    if bc is None and parent.version == x509.Version.v3:
        return True
    if bc is not None and not bc.ca:
        return True
    try:
        ku = parent.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return False
    any_bit = (
        ku.digital_signature
        or ku.content_commitment
        or ku.key_encipherment
        or ku.data_encipherment
        or ku.key_agreement
        or ku.key_cert_sign
        or ku.crl_sign
    )
    return any_bit and not ku.key_cert_sign


def _signature_problem(child: x509.Certificate, parent: x509.Certificate) -> GoError | None:
    """Go's ``child.CheckSignatureFrom(parent)``, with Go's error texts."""
    if _cannot_sign(parent):
        return GoError(_CONSTRAINT_VIOLATION)
    have, go_type = _go_key_type(parent.public_key())
    want = _signature_key_algorithm(child)
    if want is not None and have and want != have:
        return GoError(
            f"x509: signature algorithm specifies an {want} public key, "
            f"but have public key of type {go_type}"
        )
    try:
        child.verify_directly_issued_by(parent)
    except InvalidSignature:
        if have == "RSA":
            return GoError("crypto/rsa: verification error")
        return GoError(f"x509: {have} verification failure")
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return GoError("x509: cannot verify signature: algorithm unimplemented")
    return None


def _hint_name(cert: x509.Certificate) -> str:
    """Go names a candidate by its CN, else its first O, else ``serial:N``."""
    for oid in (x509.NameOID.COMMON_NAME, x509.NameOID.ORGANIZATION_NAME):
        attrs = cert.subject.get_attributes_for_oid(oid)
        if attrs:
            value = attrs[-1 if oid == x509.NameOID.COMMON_NAME else 0].value
            if value:
                return str(value)
    return f"serial:{cert.serial_number}"


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the printable ASCII these messages hold."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unknown_authority(hint: tuple[GoError, x509.Certificate] | None) -> GoError:
    text = "x509: certificate signed by unknown authority"
    if hint is not None:
        err, cert = hint
        text += (
            f" (possibly because of {_go_quote(err.text)} while trying to verify "
            f"candidate authority certificate {_go_quote(_hint_name(cert))})"
        )
    return GoError(text)


def _build_chains(
    chain: list[x509.Certificate],
    pool: list[x509.Certificate],
    now: dt.datetime | None,
    checks: list[int],
) -> tuple[list[list[x509.Certificate]], GoError | None]:
    """Go's ``buildChains`` with roots and intermediates both ``pool``.

    As in Go, the error returned when no chain is found is the last check a
    candidate failed after its signature verified (so an expired issuer gives
    ``Expired``), else "unknown authority" with the first failure as a hint.
    """
    child = chain[-1]
    parents = _potential_parents(child, pool)
    chains: list[list[x509.Certificate]] = []
    err: GoError | None = None
    hint: tuple[GoError, x509.Certificate] | None = None
    for kind, cand in [(_ROOT, p) for p in parents] + [(_INTERMEDIATE, p) for p in parents]:
        if not _has_public_key(cand) or _already_in_chain(cand, chain):
            continue
        checks[0] += 1
        if checks[0] > MAX_SIGNATURE_CHECKS:
            err = GoError(
                "x509: signature check attempts limit reached while verifying certificate chain"
            )
            continue
        bad_signature = _signature_problem(child, cand)
        if bad_signature is not None:
            hint = hint or (bad_signature, cand)
            continue
        err = _is_valid(cand, kind, chain, now)
        if err is not None:
            hint = hint or (err, cand)
            continue
        if kind == _ROOT:
            chains.append([*chain, cand])
        else:
            found, err = _build_chains([*chain, cand], pool, now, checks)
            chains += found
    if chains:
        return chains, None
    return [], err or _unknown_authority(hint)


def _serves_tls(chain: list[x509.Certificate]) -> bool:
    """Every certificate that lists extended key usages allows serverAuth (or any)."""
    for cert in chain:
        try:
            usages = list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
        except x509.ExtensionNotFound:
            continue
        if not usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages:
            continue
        if ExtendedKeyUsageOID.SERVER_AUTH not in usages:
            return False
    return True
