"""The shared name and address validators (router, DNS and API use these same functions)."""

from __future__ import annotations

import pytest

from shiftnet.api import names
from shiftnet.errors import InvalidInput


@pytest.mark.parametrize(
    ("value", "label", "subdomain", "hostname"),
    [
        ("web", True, True, True),
        ("1-abc", True, True, True),
        ("a" * 63, True, True, True),
        ("a" * 64, False, True, False),  # a 64-character subdomain is legal, not as a DNS name
        ("www.example.com", False, True, True),
        (f"{'a' * 64}.example.com", False, True, False),
        ("Web", False, False, False),
        ("-web", False, False, False),
        ("web-", False, False, False),
        ("we_b", False, False, False),
        ("", False, False, False),
        ("a..b", False, False, False),
        ("example.com.", False, False, False),
        (".".join(["a" * 63] * 4), False, False, False),  # 255 characters
    ],
)
def test_dns_names(value: str, label: bool, subdomain: bool, hostname: bool) -> None:
    assert names.is_dns1123_label(value) is label
    assert names.is_dns1123_subdomain(value) is subdomain
    assert names.is_hostname(value) is hostname


def test_dns1035_labels_start_with_a_letter() -> None:
    assert names.is_dns1035_label("web-1")
    assert not names.is_dns1035_label("1web")


def test_require_functions_raise_one_sentence() -> None:
    assert names.require_hostname("www.example.com") == "www.example.com"
    with pytest.raises(InvalidInput) as exc:
        names.require_hostname("Www.example.com", "router canonical host name")
    assert str(exc.value).startswith(
        'router canonical host name "Www.example.com" is invalid: a lowercase RFC 1123 subdomain'
    )
    with pytest.raises(InvalidInput, match=r'name "a\.b" is invalid: a lowercase RFC 1123 label'):
        names.require_dns1123_label("a.b")
    with pytest.raises(InvalidInput, match="must be no more than 253 characters"):
        names.require_dns1123_subdomain("a" * 254)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("http", None),
        ("h2c", None),
        ("web-8080", None),
        ("a" * 15, None),
        ("a" * 16, "must be no more than 15 characters"),
        ("HTTP", "must contain only lowercase letters, digits or '-' (a-z, 0-9, -)"),
        ("-http", "must not begin or end with a hyphen"),
        ("ht--tp", "must not contain consecutive hyphens"),
        ("8080", "must contain at least one letter (a-z)"),
    ],
)
def test_port_names(value: str, reason: str | None) -> None:
    errs = names.port_name_errors(value)
    assert (errs[0] if errs else None) == reason


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("10.1.2.3", True),
        ("127.10.0.5", True),
        ("2001:db8::1", True),
        ("10.1.2", False),
        ("010.1.2.3", False),
        ("fe80::1%eth0", False),
        ("10.1.2.3/32", False),
        ("", False),
    ],
)
def test_ip_addresses(value: str, ok: bool) -> None:
    assert (not names.ip_errors(value)) is ok


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("10.1.0.0/16", None),
        ("fd00::/64", None),
        ("10.1.0.1/16", "is not in canonical form (should be 10.1.0.0/16)"),
        ("10.1.0.0", "must be a valid CIDR with a prefix length (e.g. 10.1.0.0/32)"),
        ("10.1.0.0/33", "must be a valid CIDR (e.g. 10.1.0.0/16)"),
        ("nope", "must be a valid CIDR (e.g. 10.1.0.0/16)"),
    ],
)
def test_cidrs(value: str, reason: str | None) -> None:
    errs = names.cidr_errors(value)
    assert (errs[0] if errs else None) == reason
    assert names.cidr_errors("fd00::/64", ipv4_only=True) == ["must be an IPv4 network"]


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app", True),
        ("app.kubernetes.io/name", True),
        ("example.com/My_Name.1", True),
        ("/name", False),
        ("example.com/", False),
        ("Example.com/name", False),
        ("a/b/c", False),
        ("n" * 64, False),
        ("_name", False),
    ],
)
def test_label_keys(key: str, ok: bool) -> None:
    assert (not names.qualified_name_errors(key)) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("v1", True),
        ("Front.end_1", True),
        ("-x", False),
        ("a b", False),
        ("v" * 64, False),
    ],
)
def test_label_values(value: str, ok: bool) -> None:
    assert (not names.label_value_errors(value)) is ok


@pytest.mark.parametrize(
    "check",
    [
        names.dns1123_label_errors,
        names.dns1123_subdomain_errors,
        names.dns1035_label_errors,
        names.hostname_errors,
    ],
)
def test_a_trailing_newline_is_not_a_valid_name(check: object) -> None:
    # "$" also matches before a final newline; the patterns must not accept "a\n".
    assert check("abc\n")  # type: ignore[operator]
    assert check("abc.example.com\n")  # type: ignore[operator]
    assert not check("abc")  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("0", True),
        ("8080", True),
        ("", False),
        ("-1", False),
        ("8080 ", False),
        ("\u00b2", False),  # superscript two: str.isdigit says yes, int() refuses
        ("8\u00b2", False),
        ("\u0663", False),  # Arabic-Indic three: int() reads it as 3
        ("\uff18\uff10", False),  # fullwidth "80"
        ("1_000", False),  # int() takes the underscore
    ],
)
def test_is_digits_takes_ascii_digits_only(text: str, digits: bool) -> None:
    assert names.is_digits(text) is digits


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0", 0),
        ("42", 42),
        ("-7", -7),
        ("+7", 7),  # strconv.ParseInt takes a plus sign too
        ("", None),
        ("-", None),
        ("+-1", None),
        (" 5", None),
        ("5 ", None),
        ("1_000", None),
        ("\u0663", None),
        ("\u00b2", None),
        ("0x10", None),
        ("1e3", None),
    ],
)
def test_parse_integer_reads_what_go_reads(text: str, number: int | None) -> None:
    assert names.parse_integer(text) == number
