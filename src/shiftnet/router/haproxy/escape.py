"""THE escaping and validating functions for every HAProxy context the renderer writes.

Why one module: route fields and annotations are user input, and HAProxy has
several small languages (configuration words, log-format strings, PCRE, map
files, crt-lists, PEM files). Each context below has exactly one function; the
renderer passes every value that did not come from a constant through one of
them. A value that cannot be expressed safely raises :class:`UnsafeValue`
instead of being written (the model and admission refuse such routes first,
so this is the last line of defence, not the first).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import re

from shiftnet.api import route_headers, tls
from shiftnet.api.names import is_digits
from shiftnet.errors import InvalidInput


class UnsafeValue(InvalidInput):
    """A value cannot be written into an HAProxy file in the context asked for."""


# ---------------------------------------------------------------- identifiers

_NAME_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-")
_NAME_MAX = 120


_NAME_SAFE_RE = re.compile(r"[a-z0-9.-]*")


def _encode_part(part: str) -> str:
    if _NAME_SAFE_RE.fullmatch(part):
        return part
    out: list[str] = []
    for ch in part:
        if ch in _NAME_SAFE:
            out.append(ch)
        else:
            out.extend(f"_{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def name(*parts: str) -> str:
    """An HAProxy identifier (backend, server, ACL, variable-free) built from ``parts``.

    Each part keeps ``[a-z0-9.-]``; every other byte becomes ``_hh`` (so the
    encoding is injective), and parts are joined with ``:``, which no encoded
    part contains. Names longer than 120 characters are cut and completed with
    ``_h`` and a SHA-256 prefix of the full name, keeping them unique.
    """
    if not parts:
        raise UnsafeValue("an HAProxy name needs at least one part")
    full = ":".join([_encode_part(p) for p in parts])
    if not full:
        raise UnsafeValue("an HAProxy name cannot be empty")
    if len(full) <= _NAME_MAX:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:24]
    return full[: _NAME_MAX - 26] + "_h" + digest


def file_name(*parts: str, suffix: str) -> str:
    """A file name (one path component) built like :func:`name`, with ``:`` as ``,``."""
    if not _SUFFIX_RE.fullmatch(suffix):
        raise UnsafeValue(f"file suffix {suffix!r} is not a plain extension")
    return name(*parts).replace(":", ",") + suffix


# ---------------------------------------------------------------- config words


_PLAIN_ASCII_RE = re.compile(r"[\x20-\x7e]*")
_VISIBLE_RE = re.compile(r"[\x21-\x7e]+")
_SUFFIX_RE = re.compile(r"\.[a-z0-9]{1,8}")


def _check_printable(value: str, what: str) -> None:
    if _PLAIN_ASCII_RE.fullmatch(value):
        return
    for ch in value:
        if not ch.isprintable() or ch in "\u2028\u2029":
            raise UnsafeValue(f"{what} contains the control character {ch!r}")


def quoted(value: str, what: str = "value") -> str:
    """``value`` as one double-quoted HAProxy configuration word that reads back unchanged.

    Inside double quotes HAProxy interprets backslash escapes and expands
    ``$VAR``; ``\\``, ``"``, ``$`` and ``#`` are therefore escaped with a
    backslash. Control characters cannot be written and are refused.
    """
    _check_printable(value, what)
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("#", "\\#")
    )
    return f'"{escaped}"'


def log_format(value: str, what: str = "value") -> str:
    """A literal string inside a log-format argument (``%`` doubled), as a quoted word."""
    return quoted(value.replace("%", "%%"), what)


def path(value: str, what: str = "path") -> str:
    """An absolute file path for the configuration (quoted; no control characters)."""
    if not value.startswith("/"):
        raise UnsafeValue(f"{what} {value!r} is not an absolute path")
    return quoted(value, what)


# ---------------------------------------------------------------- header actions

_HEADER_QUOTE = {"\\": "\\\\", '"': '\\"', "$": "\\$", "#": "\\#"}


def _header_word(value: str) -> str:
    """A double-quoted word of ASCII: ``\\ " $ #`` escaped, other bytes above 0x7e as ``\\xhh``.

    HAProxy reads ``\\xhh`` inside quotes as that byte, so a UTF-8 value
    arrives unchanged while the file stays ASCII. Control characters never get
    here (the grammar refuses them).
    """
    if _PLAIN_ASCII_RE.fullmatch(value):  # the common case: nothing to encode
        escaped = (
            value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("#", "\\#")
        )
        return f'"{escaped}"'
    out: list[str] = []
    for ch in value:
        if " " <= ch <= "~":
            out.append(_HEADER_QUOTE.get(ch, ch))
        elif ord(ch) < 0x20 or ch == "\x7f":
            raise UnsafeValue(f"header text contains the control character {ch!r}")
        else:
            try:
                raw = ch.encode("utf-8")
            except UnicodeEncodeError:
                raise UnsafeValue(f"header text contains {ch!r}, which is not UTF-8") from None
            out.extend(f"\\x{b:02x}" for b in raw)
    return '"' + "".join(out) + '"'


def header_name(value: str, what: str = "header name", reserved: tuple[str, ...] = ()) -> str:
    """A header action's name as one quoted word: an HTTP token of at most 255 characters,
    none of ``reserved`` (lowercase). HAProxy takes the name literally (no ``%`` syntax)."""
    problem = route_headers.name_problem(value, reserved or route_headers.RESERVED_NAMES)
    if problem is not None:
        raise UnsafeValue(f"{what} {value!r}: {problem}")
    return _header_word(value)


def header_value(value: str, direction: str, what: str = "header value") -> str:
    """A ``set-header`` value as one quoted log-format word.

    The value must match the header grammar of ``direction`` (``request`` or
    ``response``, :mod:`shiftnet.api.route_headers`): ``%%`` and the permitted
    ``%[...]`` fetches stay HAProxy's to expand, and nothing else can.
    """
    problem = route_headers.value_problem(value, direction)
    if problem is not None:
        raise UnsafeValue(f"{what} {value[:80]!r} is not a permitted {direction} header value")
    return _header_word(value)


# ---------------------------------------------------------------- regular expressions

_REGEX_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_-")


def regex_literal(value: str, what: str = "value") -> str:
    """A PCRE pattern matching exactly ``value`` (ASCII only; every symbol backslashed).

    The result still has to go through :func:`quoted` when it is a config word.
    """
    out: list[str] = []
    for ch in value:
        if not (0x21 <= ord(ch) <= 0x7E):
            raise UnsafeValue(f"{what} {value!r} must be visible ASCII to be matched")
        out.append(ch if ch in _REGEX_PLAIN else "\\" + ch)
    return "".join(out)


# ---------------------------------------------------------------- URL paths and hosts

# RFC 3986 path characters: unreserved, sub-delims, ":", "@", "/" and "%" escapes.
_URL_PATH_RE = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*")
# Labels of 1-63 ``[a-z0-9-]`` that neither start nor end with ``-``, joined by dots.
_HOST_RE = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9-]{1,63}(?<!-))*")


def url_path(value: str, what: str = "path") -> str:
    """A request path as routes give it: ``/`` then RFC 3986 path characters, at most 2048."""
    if len(value) > 2048 or not _URL_PATH_RE.fullmatch(value):
        raise UnsafeValue(f"{what} {value!r} is not a URL path of RFC 3986 characters")
    return value


def hostname(value: str, what: str = "host") -> str:
    """A lowercase DNS host name (what map keys, SNI filters and redirects may hold)."""
    if len(value) > 253 or not _HOST_RE.fullmatch(value):
        raise UnsafeValue(f"{what} {value!r} is not a lowercase DNS name")
    return value


# ---------------------------------------------------------------- addresses


# Dotted quads exactly as ipaddress writes them (no leading zeros): such text is
# its own canonical form, so it needs no parsing.
_IPV4_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_CANONICAL_IPV4_RE = re.compile(rf"{_IPV4_OCTET}(?:\.{_IPV4_OCTET}){{3}}")


@functools.lru_cache(maxsize=131072)
def server_address(ip: str, port: int, what: str = "server") -> str:
    """``ip:port`` for a ``server`` line (IPv6 in brackets); anything else is refused.

    An IPv6 address with a zone (``fe80::1%eth0``) is refused too: Python parses
    it, but HAProxy cannot resolve it and would reject the whole configuration.
    """
    if isinstance(ip, str) and _CANONICAL_IPV4_RE.fullmatch(ip):  # common: no parsing needed
        if not isinstance(port, int) or not 0 < port < 65536:
            raise UnsafeValue(f"{what} port {port!r} is not between 1 and 65535")
        return f"{ip}:{port}"
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        raise UnsafeValue(f"{what} address {ip!r} is not an IP address") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.scope_id is not None:
        raise UnsafeValue(f"{what} address {ip!r} has a zone, which HAProxy cannot use")
    if not isinstance(port, int) or not 0 < port < 65536:
        raise UnsafeValue(f"{what} port {port!r} is not between 1 and 65535")
    return f"[{addr}]:{port}" if addr.version == 6 else f"{addr}:{port}"


def bind_address(ip: str, port: int, what: str = "bind") -> str:
    """``[ip]:port`` for a ``bind`` line; "" means every address (``:port``)."""
    if ip == "":
        if not isinstance(port, int) or not 0 < port < 65536:
            raise UnsafeValue(f"{what} port {port!r} is not between 1 and 65535")
        return f":{port}"
    return server_address(ip, port, what)


def ip_network(value: str, what: str = "network") -> str:
    """A canonical IP network (``10.0.0.0/8``, ``::1/128``) for an ACL pattern file line."""
    try:
        return str(ipaddress.ip_network(value, strict=False))
    except ValueError:
        raise UnsafeValue(f"{what} {value!r} is not an IP address or CIDR") from None


# ---------------------------------------------------------------- map files and crt-lists


def map_key(value: str, what: str = "map key") -> str:
    """A key in an HAProxy map file: visible ASCII, no leading ``#`` (keys cannot be quoted)."""
    if not value or not _VISIBLE_RE.fullmatch(value) or value.startswith("#"):
        raise UnsafeValue(f"{what} {value!r} cannot be written in a map file")
    return value


def sni_filter(value: str, wildcard: bool = False) -> str:
    """A crt-list SNI filter: a host name, or ``*.`` + a domain for wildcard routes."""
    return ("*." if wildcard else "") + hostname(value, "SNI filter")


# ---------------------------------------------------------------- PEM files

PEM_LABELS = tls.PEM_TYPES
_KEY_LABELS = frozenset({"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"})


def pem(*texts: str, what: str = "PEM data", max_keys: int = 1) -> bytes:
    """Canonical PEM: every block of ``texts``, in order, re-wrapped at 64 columns.

    The input is read with the one PEM grammar (:func:`shiftnet.api.tls.pem_blocks`,
    which validation uses too), so nothing but the blocks' content is left out:
    text outside blocks, which OpenSSL ignores as well. A block this cannot
    write whole (headers, a stray armor line, bad base64, an unknown type) or
    more than ``max_keys`` private keys (HAProxy would load the first) raise
    :class:`UnsafeValue` instead of being dropped.
    """
    out: list[str] = []
    keys = 0
    for text in texts:
        try:
            blocks = tls.pem_blocks(text, what)
        except tls.CertificateError as err:
            raise UnsafeValue(str(err)) from None
        for block in blocks:
            if block.type not in PEM_LABELS:
                raise UnsafeValue(f"{what} holds an unsupported PEM block {block.type!r}")
            keys += block.type in _KEY_LABELS
            if keys > max_keys:
                raise UnsafeValue(f"{what} holds more than {max_keys} private key(s)")
            b64 = base64.b64encode(block.der).decode()
            body = "\n".join(b64[i : i + 64] for i in range(0, len(b64), 64))
            out.append(f"-----BEGIN {block.type}-----\n{body}\n-----END {block.type}-----\n")
    if not out:
        raise UnsafeValue(f"{what} holds no PEM block")
    return "".join(out).encode()


# ---------------------------------------------------------------- logging

# HAProxy 2.6's log-format variables (longest first, so "%Ta" is not read as "%T" + "a").
_LOG_VARIABLES = sorted(
    [
        "B",
        "CC",
        "CS",
        "H",
        "HM",
        "HP",
        "HPO",
        "HQ",
        "HU",
        "HV",
        "ID",
        "ST",
        "T",
        "Ta",
        "Tc",
        "Td",
        "Th",
        "Ti",
        "Tq",
        "TR",
        "Tr",
        "Ts",
        "Tt",
        "Tu",
        "Tw",
        "U",
        "ac",
        "b",
        "bc",
        "bi",
        "bp",
        "bq",
        "ci",
        "cp",
        "f",
        "fc",
        "fi",
        "fp",
        "ft",
        "hr",
        "hrl",
        "hs",
        "hsl",
        "lc",
        "ms",
        "o",
        "pid",
        "r",
        "rc",
        "rt",
        "s",
        "sc",
        "si",
        "sp",
        "sq",
        "sslc",
        "sslv",
        "t",
        "tr",
        "trg",
        "trl",
        "ts",
        "tsc",
    ],
    key=len,
    reverse=True,
)
_FETCH_CALL = r"[a-z0-9_.]+(?:\([A-Za-z0-9_.,:/=+ -]*\))?"
_LOG_TOKEN_RE = re.compile(
    r"%%"
    r"|%(?:\{[+-]?[QXE](?:,[+-]?[QXE])*\})?"
    rf"(?:\[{_FETCH_CALL}(?:,{_FETCH_CALL})*\]|(?:{'|'.join(_LOG_VARIABLES)}))"
    r"|[\x20-\x24\x26-\x7e]+"
)
_LOG_FORMAT_MAX = 1024


def log_format_string(value: str, what: str = "log-format") -> str:
    """A whole log-format string (``ROUTER_SYSLOG_FORMAT``, ``ROUTER_UNIQUE_ID_FORMAT``) as
    one quoted word.

    The string may be given as OpenShift's template writes it into the
    configuration (in double quotes, spaces as ``\\ ``); it is read back to
    the plain string first. It must be printable ASCII made of literal text,
    ``%%``, HAProxy's log variables (``%ci``, ``%{+Q}r``, ...) and sample
    expressions (``%[var(txn.host),lower]``) of plain names and arguments.
    """
    text = value
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        text = text[1:-1]
    text = text.replace("\\ ", " ")
    if not text or len(text) > _LOG_FORMAT_MAX:
        raise UnsafeValue(f"{what} must hold 1 to {_LOG_FORMAT_MAX} characters")
    pos = 0
    while pos < len(text):
        match = _LOG_TOKEN_RE.match(text, pos)
        if match is None:
            raise UnsafeValue(
                f"{what} {value[:80]!r} cannot be read at {text[pos : pos + 12]!r}:"
                " use printable ASCII, %%, log variables (%ci, %{+Q}r) or %[sample,converter]"
            )
        pos = match.end()
    if "\\" in text or '"' in text:
        raise UnsafeValue(f"{what} {value[:80]!r} must not hold a backslash or a double quote")
    return quoted(text, what)


def capture_name(value: str, what: str = "captured header name") -> str:
    """A header or cookie name for ``capture``: an HTTP token, as one quoted word."""
    if (
        not value
        or len(value) > route_headers.MAX_NAME_LENGTH
        or not route_headers.NAME_RE.fullmatch(value)
    ):
        raise UnsafeValue(f"{what} {value!r} is not an HTTP token")
    return _header_word(value)


_SYSLOG_PREFIXES = ("udp@", "udp4@", "udp6@")


def syslog_target(value: str, what: str = "ROUTER_SYSLOG_ADDRESS") -> str:
    """A ``log`` target, as one quoted word: ``host:port`` (UDP), ``udp@host:port``,
    ``unix@/path`` or an absolute path (a UNIX datagram socket)."""
    if value.startswith(("unix@", "/")):
        socket_path = value.removeprefix("unix@")
        if not socket_path.startswith("/") or not _VISIBLE_RE.fullmatch(socket_path):
            raise UnsafeValue(f"{what} {value!r} must name an absolute socket path without spaces")
        if len(socket_path) > 107:
            raise UnsafeValue(f"{what} {value!r} is longer than a UNIX socket path may be")
        return quoted(value, what)
    rest = value
    for prefix in _SYSLOG_PREFIXES:
        rest = rest.removeprefix(prefix)
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not is_digits(port) or not 0 < int(port) < 65536:
        raise UnsafeValue(
            f"{what} {value!r} must be host:port, udp@host:port, unix@/path or /path"
            " (port between 1 and 65535)"
        )
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        hostname(bare.lower(), f"{what} host")
    return quoted(value, what)
