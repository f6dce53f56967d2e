"""Hostile values for every Route field and annotation that reaches HAProxy.

Two kinds: strings that try to break out of a configuration word, a map line
or a regular expression (quotes, newlines, ``%[``, ``$``, ``#``, unicode, very
long values), and PEM oddities made from good TLS material (RFC 1421 headers,
encrypted keys, extra or foreign blocks, CR/whitespace, text between blocks,
empty blocks, very long lines, NUL). The render fuzz test and the live
hostile-tenant test draw from here.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import shiftnet.router.annotations as ann

HOSTILE_CHARS = "ab./-_:\"'\\ \t\n\r%[]{}()$#;,|&=+?*!<>`~@^é€ß\x00\x01\x7f\u2028\u2029\ufeff😀"

FIXED_HOSTILE = [
    "%[src]",
    '"; reload',
    "x\nbackend evil",
    "a b",
    "\\",
    "#x",
    "$HOME",
    "${X}",
    "%%",
    "'",
    "%[req.hdr(host)]",
    "\\1",
    "a\r\nb",
    "é.example.com",
    "x" * 300,
    "/" + 'a%["\\ .' * 400,  # very long
]

# Every annotation the renderer reads (router/annotations.py).
ANNOTATION_KEYS = [
    ann.BALANCE,
    ann.DISABLE_COOKIES,
    ann.COOKIE_NAME,
    ann.HEALTH_CHECK_INTERVAL,
    ann.TIMEOUT,
    ann.TIMEOUT_TUNNEL,
    ann.IP_ALLOWLIST,
    ann.IP_WHITELIST,
    ann.HSTS_HEADER,
    ann.REWRITE_TARGET,
    ann.SET_FORWARDED_HEADERS,
    ann.RATE_LIMIT,
    ann.RATE_LIMIT_CONCURRENT_TCP,
    ann.RATE_LIMIT_RATE_TCP,
    ann.RATE_LIMIT_RATE_HTTP,
    ann.POD_CONCURRENT_CONNECTIONS,
]

# Per annotation, values that look almost right: the edges of each small language.
NEAR_MISSES: dict[str, list[str]] = {
    ann.BALANCE: ["roundrobin\n", "leastconn ", "source;", "uri len 1", "random(2)", ""],
    ann.COOKIE_NAME: ["a b", "a;b", "a=b", "c\x00", "%[src]", "x" * 5000],
    ann.TIMEOUT: ["5", "5x", "-1s", "99999999999d", "1s\n", "1.5s", ""],
    ann.TIMEOUT_TUNNEL: ["1h", "0", "2147483648ms", "s"],
    ann.HEALTH_CHECK_INTERVAL: ["0s", "1us", "-5s", "10000000000s"],
    ann.IP_ALLOWLIST: ["10.0.0.0/33", "::/129", "1.2.3.4/8 x", "1.2.3.4\n5.6.7.8", " " * 3],
    ann.IP_WHITELIST: ["0.0.0.0/0", "256.1.1.1", "10.0.0.1/" + "8" * 50],
    ann.HSTS_HEADER: ["max-age=-1", "max-age=1\r\nX-Evil: 1", "includeSubDomains", "%[src]"],
    ann.REWRITE_TARGET: ["/\\1", "/%[src]", "/a b", "//", "/\n", "x"],
    ann.SET_FORWARDED_HEADERS: ["append\n", "replace;", "never never"],
    ann.RATE_LIMIT: ["true\n", "yes"],
    ann.RATE_LIMIT_CONCURRENT_TCP: ["-1", "1e9", "99999999999999999999", "1 "],
    ann.RATE_LIMIT_RATE_TCP: ["0x10", "1.5", "%[src]"],
    ann.RATE_LIMIT_RATE_HTTP: ["-0", "", "9" * 30],
    ann.POD_CONCURRENT_CONNECTIONS: ["0", "-5", "1\n2"],
    ann.DISABLE_COOKIES: ["TRUE", "1", "true\n"],
}

HOSTILE_HOSTS = [
    "a b.example.com",
    "x\n.example.com",
    "UPPER.example.com",
    "-lead.example.com",
    "a..b.example.com",
    "é.example.com",
    "%[src].example.com",
    "a" * 64 + ".example.com",
    ("a" * 60 + ".") * 5 + "com",
    "*.example.com",
    "example.com.",
    "127.0.0.1",
]
HOSTILE_PATHS = [
    '/q"x',
    "/x\\y",
    "/$v",
    "/%[src]",
    "/a b",
    "/a\nb",
    "/#frag",
    "/" + "%[" * 300,
    "/é",
    "no-slash",
    "/" + "a" * 5000,
]
HOSTILE_NAMES = ["a" * 253, "x.y", "a-", "1-2-3"]

# spec.to / spec.alternateBackends[] (service names and weights), spec.port.targetPort,
# spec.wildcardPolicy and spec.tls.insecureEdgeTerminationPolicy: the edges of each
# field's type and grammar (wrong JSON types too: a raw body carries them).
HOSTILE_SERVICE_NAMES = ["", "Evil", "evil_1", "evil.svc", "..", "evil\n", "%[src]", "a b", "é"]
HOSTILE_WEIGHTS: list[object] = [-1, 0, 257, 2**31, 2**63, "1", "x", 1.5, None, True]
HOSTILE_TARGET_PORTS: list[object] = [
    0,
    -1,
    65536,
    2**40,
    "",
    " ",
    "http\n",
    "%[src]",
    "a" * 64,
    "80x",
    "0080",
    "\uff18\uff10",  # full-width digits: str.isdigit() says yes, int() reads 80
    True,
    1.5,
]
HOSTILE_WILDCARD_POLICIES = ["", "subdomain", "Subdomain\n", "All", "%[src]"]
HOSTILE_INSECURE_POLICIES = ["", "allow", "Redirect ", "%[src]", "None\n", "redirect"]

# Endpoints and EndpointSlices: addresses, ports, port names and the pod names of
# targetRef (kept in the router's model) as a hand-written or foreign object has them.
HOSTILE_IPS = [
    "",
    "1.2.3",
    "1.2.3.4.5",
    "01.2.3.4",
    "::ffff:127.0.0.1",
    "fe80::1%eth0",
    "127.0.0.1 127.0.0.2",
    "127.0.0.1\n",
    "localhost",
    "%[src]",
    "[::1]",
    "1.2.3.4:80",
]
HOSTILE_ENDPOINT_PORTS = [-1, 0, 65536, 2**31]
HOSTILE_POD_NAMES = HOSTILE_SERVICE_NAMES + FIXED_HOSTILE

# spec.httpHeaders: names and values at the edges of OpenShift's header grammar
# (fetches and converters it does not permit, the wrong direction's fetch, config
# syntax, line breaks) next to ones it accepts.
HEADER_NAMES = ["X-A", "x-b", "X#$'%", "Host", "Cookie", "X Y", 'X"', "X\nY", "é", "a" * 256, ""]
HEADER_VALUES = [
    "v",
    "%[req.hdr(Host),lower]",
    "%[res.hdr(Server),base64]",
    "%{+Q}[ssl_c_der,base64]",
    "%%",
    '"; server evil 1.2.3.4:80',
    "x\n  server evil 1.2.3.4:80",
    "a\r\nX-Evil: 1",
    "%[env(HOME)]",
    "%[src]",
    "%[req.hdr(a),url_dec]",
    "100%",
    "\\",
    "$HOME #c",
    "é\u2028\x85",
    "%[req.hdr(Ho st)]",
    "x" * 16385,
]


# ---------------------------------------------------------------- PEM oddities


@dataclass(frozen=True)
class PemCase:
    """One way of writing a Route's TLS material: its name and the ``spec.tls`` fields."""

    name: str
    tls: dict[str, str] = field(default_factory=dict)


def _blocks(pem: str) -> list[str]:
    out, current = [], []
    for line in pem.splitlines(keepends=True):
        current.append(line)
        if line.startswith("-----END "):
            out.append("".join(current))
            current = []
    return out


def _with_header(block: str, header: str) -> str:
    first, rest = block.split("\n", 1)
    return f"{first}\n{header}\n{rest}"


def _in_body(block: str, suffix: str) -> str:
    """``block`` with ``suffix`` appended to its first base64 line."""
    first, second, rest = block.split("\n", 2)
    return f"{first}\n{second}{suffix}\n{rest}"


def _one_line(block: str) -> str:
    lines = block.strip("\n").split("\n")
    return f"{lines[0]}\n{''.join(lines[1:-1])}\n{lines[-1]}\n"


def encrypted_traditional_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> str:
    """A key as ``openssl`` writes an encrypted traditional key: Proc-Type/DEK-Info headers."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(b"secret"),
    ).decode()


def pem_cases(
    cert: str, key: str, ca: str, other_key: str, key_obj: ec.EllipticCurvePrivateKey
) -> Iterator[PemCase]:
    """Oddities of an edge route's certificate/key/caCertificate built from good material.

    ``cert`` is signed by ``ca`` and matches ``key``; ``other_key`` is unrelated.
    """
    good = {"certificate": cert, "key": key, "caCertificate": ca}

    def case(name: str, **fields: str) -> PemCase:
        return PemCase(name, {**good, **fields})

    yield case("good")
    yield case("cert Comment header", certificate=_with_header(cert, "Comment: from a tool\n"))
    yield case("key Proc-Type 4,ENCRYPTED (RFC 1421)", key=encrypted_traditional_key(key_obj))
    yield case("key Proc-Type header, not encrypted", key=_with_header(key, "Proc-Type: 4,CLEAR\n"))
    yield case(
        "key Proc-Type 4,ENCRYPTED headers on a plain body",
        key=_with_header(key, "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0011223344\n"),
    )
    yield case("ca DEK-Info header", caCertificate=_with_header(ca, "DEK-Info: X\n"))
    yield case("header without blank line", certificate=_with_header(cert, "X-Y: z"))
    pkcs8_encrypted = key_obj.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    ).decode()
    yield case("key ENCRYPTED PRIVATE KEY", key=pkcs8_encrypted)
    yield case(
        "CRLF line ends", certificate=cert.replace("\n", "\r\n"), key=key.replace("\n", "\r\n")
    )
    yield case("lone CR line ends", certificate=cert.replace("\n", "\r"))
    yield case("trailing spaces", certificate=cert.replace("\n", "  \n"))
    yield case("trailing tabs", key=key.replace("\n", "\t\n"))
    yield case("leading spaces", certificate="".join("   " + ln for ln in cert.splitlines(True)))
    yield case("blank lines inside", certificate=cert.replace("\n", "\n\n", 3))
    yield case("space inside base64", certificate=_in_body(cert, " AAAA"))
    yield case("vertical tab", certificate=_in_body(cert, "\x0b"))
    yield case("one long line", certificate=_one_line(cert), key=_one_line(key))
    yield case("no final newline", certificate=cert.rstrip("\n"), key=key.rstrip("\n"))
    yield case("text around blocks", certificate="subject=CN=x\n" + cert + "issuer=y\n")
    yield case("text between blocks", certificate=cert + "# the CA follows\n" + ca)
    yield case("NUL outside blocks", certificate="\x00\n" + cert + "\x00\n")
    yield case("NUL in base64", certificate=_in_body(cert, "\x00"))
    yield case("unicode in base64", certificate=cert[:40] + "é" + cert[41:])
    yield case(
        "empty certificate block",
        certificate="-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n" + cert,
    )
    yield case("empty key block", key="-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n")
    yield case("BEGIN without END", certificate=cert + "-----BEGIN CERTIFICATE-----\nAAAA\n")
    yield case("END without BEGIN", certificate="-----END CERTIFICATE-----\n" + cert)
    yield case("nested BEGIN", certificate=cert.replace("\n", "\n-----BEGIN CERTIFICATE-----\n", 2))
    yield case("END label mismatch", certificate=cert.replace("END CERTIFICATE", "END X509 CRL"))
    yield case("lowercase label", certificate=cert.replace("CERTIFICATE", "certificate"))
    yield case("malformed armor dashes", certificate=cert.replace("-----BEGIN", "----BEGIN"))
    yield case(
        "trailing text on armor line",
        certificate=cert.replace("CERTIFICATE-----\n", "CERTIFICATE----- x\n", 1),
    )
    yield case("padding in the middle", certificate=_in_body(cert, "=="))
    yield case("key inside certificate field", certificate=cert + key, key="")
    yield case("key in both fields", certificate=cert + other_key)
    yield case("same key in both fields", certificate=cert + key)
    yield case("key in caCertificate", caCertificate=ca + other_key)
    yield case("two keys in key field", key=key + other_key)
    yield case("certificate in key field", key=key + ca)
    yield case("EC PARAMETERS before key", key=_ec_parameters() + key)
    yield case("ECDSA PRIVATE KEY label", key=key.replace("PRIVATE KEY", "ECDSA PRIVATE KEY"))
    yield case("X509 CRL block", certificate=cert + cert.replace("CERTIFICATE", "X509 CRL"))
    yield case(
        "TRUSTED CERTIFICATE", caCertificate=ca.replace("CERTIFICATE", "TRUSTED CERTIFICATE")
    )
    yield case("chain in reverse", certificate=ca + cert)
    yield case("garbage certificate", certificate='junk\n"x')
    yield case("very long text outside", certificate="x" * 200_000 + "\n" + cert)


def _ec_parameters() -> str:
    """The ``EC PARAMETERS`` block ``openssl ecparam -genkey`` writes before its key."""
    der = bytes.fromhex("06082a8648ce3d030107")  # OID prime256v1
    body = base64.b64encode(der).decode()
    return f"-----BEGIN EC PARAMETERS-----\n{body}\n-----END EC PARAMETERS-----\n"
