"""The name and address rules every part of shiftnet shares.

These are THE validating functions for names that end up in foreign languages
(HAProxy maps, DNS answers, nft sets): the router, the DNS server and the API
validation all call them, so a name accepted in one place is accepted in all.

Each ``*_errors`` function returns a list of short reasons (empty when the
value is fine), in the style of Kubernetes' ``IsDNS1123Subdomain``; the
``is_*`` forms answer yes/no and ``require_*`` raise :class:`InvalidInput`.
"""

from __future__ import annotations

import ipaddress
import re

from shiftnet.errors import InvalidInput

__all__ = [
    "DNS1123_LABEL_MAX",
    "DNS1123_SUBDOMAIN_MAX",
    "cidr_errors",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "env_var_name_errors",
    "hostname_errors",
    "ip_errors",
    "ipv4_errors",
    "is_digits",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_hostname",
    "label_value_errors",
    "parse_integer",
    "port_name_errors",
    "port_number_errors",
    "qualified_name_errors",
    "require_dns1123_label",
    "require_dns1123_subdomain",
    "require_hostname",
]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63
PORT_NAME_MAX = 15

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"^{_LABEL}\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*\Z")
_DNS1035_LABEL_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_PORT_NAME_CHARS_RE = re.compile(r"^[-a-z0-9]+\Z")
_PORT_NAME_LETTER_RE = re.compile(r"[a-z]")
_ENV_VAR_RE = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*\Z")

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must be made of lowercase letters, digits or '-', "
    "and must start and end with a letter or digit (e.g. 'web', or '1-abc')"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must be made of lowercase letters, digits, '-' or '.', "
    "and must start and end with a letter or digit (e.g. 'www.example.com')"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must be made of lowercase letters, digits or '-', "
    "start with a letter, and end with a letter or digit (e.g. 'my-name', or 'abc-123')"
)


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label_errors(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 label (namespace names, port names)."""
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_too_long(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL_RE.match(value):
        errs.append(_DNS1123_LABEL_MSG)
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 subdomain (most object names)."""
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_too_long(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_DNS1123_SUBDOMAIN_MSG)
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1035 label (Service names: they become DNS labels)."""
    errs: list[str] = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(_too_long(DNS1035_LABEL_MAX))
    if not _DNS1035_LABEL_RE.match(value):
        errs.append(_DNS1035_LABEL_MSG)
    return errs


# A host name with nothing to report: labels of 1-63 ``[a-z0-9-]`` that neither
# start nor end with ``-``. One match answers the common case; anything it does
# not match goes through the detailed checks below, which word the errors.
_HOSTNAME_OK_RE = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9-]{1,63}(?<!-))*")


def hostname_errors(value: str) -> list[str]:
    """Problems with ``value`` as a DNS host name: a subdomain whose every label is <= 63.

    This is the rule for a Route's ``spec.host`` and for any name the DNS
    server answers: a plain subdomain check alone would let a 64-character
    label through, which no resolver accepts.
    """
    if len(value) <= DNS1123_SUBDOMAIN_MAX and _HOSTNAME_OK_RE.fullmatch(value):
        return []
    return _hostname_problems(value)


def _hostname_problems(value: str) -> list[str]:
    """:func:`hostname_errors` without its fast path (the tests compare the two)."""
    errs = dns1123_subdomain_errors(value)
    for label in value.split("."):
        if len(label) > DNS1123_LABEL_MAX:
            errs.append(
                f"each part between dots must be no more than {DNS1123_LABEL_MAX} characters"
            )
            break
    return errs


def is_dns1123_label(value: str) -> bool:
    return not dns1123_label_errors(value)


def is_dns1123_subdomain(value: str) -> bool:
    return not dns1123_subdomain_errors(value)


def is_dns1035_label(value: str) -> bool:
    return not dns1035_label_errors(value)


def is_hostname(value: str) -> bool:
    return not hostname_errors(value)


def require_hostname(value: str, what: str = "host name") -> str:
    """Return ``value`` if it is a valid DNS host name, else raise one clear sentence."""
    errs = hostname_errors(value)
    if errs:
        raise InvalidInput(f'{what} "{value}" is invalid: {errs[0]}')
    return value


def require_dns1123_label(value: str, what: str = "name") -> str:
    errs = dns1123_label_errors(value)
    if errs:
        raise InvalidInput(f'{what} "{value}" is invalid: {errs[0]}')
    return value


def require_dns1123_subdomain(value: str, what: str = "name") -> str:
    errs = dns1123_subdomain_errors(value)
    if errs:
        raise InvalidInput(f'{what} "{value}" is invalid: {errs[0]}')
    return value


def qualified_name_errors(value: str) -> list[str]:
    """Problems with ``value`` as a label or annotation key: ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = [f"prefix part {e}" for e in dns1123_subdomain_errors(prefix)]
        if errs:
            return errs
    else:
        return [
            "a qualified name must be a name part with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        return ["name part must be non-empty"]
    errs = []
    if len(name) > QUALIFIED_NAME_MAX:
        errs.append(f"name part {_too_long(QUALIFIED_NAME_MAX)}")
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append(
            "name part must be made of letters, digits, '-', '_' or '.', and must start "
            "and end with a letter or digit (e.g. 'MyName', or 'my.name', or '123-abc')"
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Problems with ``value`` as a label value (may be empty)."""
    errs: list[str] = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(_too_long(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            "a valid label value must be empty or made of letters, digits, '-', '_' or '.', "
            "and must start and end with a letter or digit (e.g. 'MyValue', or 'my_value')"
        )
    return errs


def port_name_errors(value: str) -> list[str]:
    """Problems with ``value`` as an IANA service name (container port names, named targetPorts)."""
    errs: list[str] = []
    if len(value) > PORT_NAME_MAX:
        errs.append(_too_long(PORT_NAME_MAX))
    if not _PORT_NAME_CHARS_RE.match(value):
        errs.append("must contain only lowercase letters, digits or '-' (a-z, 0-9, -)")
    if value.startswith("-") or value.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and not _PORT_NAME_LETTER_RE.search(value):
        errs.append("must contain at least one letter (a-z)")
    return errs


def is_digits(text: str) -> bool:
    """``text`` is one or more ASCII digits: a number as Kubernetes and every config
    language here write one. ``str.isdigit`` alone also takes ``'²'``, which ``int``
    refuses, and ``'٣'``, which ``int`` reads as 3."""
    return text.isascii() and text.isdigit()


def parse_integer(text: str) -> int | None:
    """``text`` as Go's ``strconv.ParseInt`` reads a base-10 number (an optional sign, then
    ASCII digits), else None: ``int`` would also take spaces, ``_`` and other scripts'
    digits, which no Kubernetes client sends and upstream refuses."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    return int(text) if is_digits(digits) else None


def port_number_errors(port: int) -> list[str]:
    if 1 <= port <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def env_var_name_errors(value: str) -> list[str]:
    if _ENV_VAR_RE.match(value):
        return []
    return [
        "a valid environment variable name must be made of letters, digits, '_', '-' or '.', "
        "and must not start with a digit"
    ]


def ip_errors(value: str) -> list[str]:
    """Problems with ``value`` as an IPv4 or IPv6 address (no zone, no prefix)."""
    try:
        if "%" in value:  # Python accepts IPv6 zones ("fe80::1%eth0"); Kubernetes does not
            raise ValueError(value)
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def ipv4_errors(value: str) -> list[str]:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return ["must be a valid IPv4 address (e.g. 10.9.8.7)"]
    return []


def cidr_errors(value: str, *, ipv4_only: bool = False) -> list[str]:
    """Problems with ``value`` as a network in CIDR notation, written in canonical form."""
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return ["must be a valid CIDR (e.g. 10.1.0.0/16)"]
    if "/" not in value:
        return [f"must be a valid CIDR with a prefix length (e.g. {net})"]
    if ipv4_only and net.version != 4:
        return ["must be an IPv4 network"]
    if ipaddress.ip_interface(value).ip != net.network_address:
        return [f"is not in canonical form (should be {net})"]
    return []
