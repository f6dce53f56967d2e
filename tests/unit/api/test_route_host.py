# ruff: noqa: E501  (expected messages are long literal sentences)
"""``spec.host`` with ``route.openshift.io/allow-non-dns-compliant-host`` and
``spec.subdomain`` on create, case by case as OpenShift's ``ValidateRoute``."""

from __future__ import annotations

from typing import Any

import pytest

from shiftnet.api import parse_object
from shiftnet.api.route import Route
from shiftnet.api.validation import errors

ALLOW = {"route.openshift.io/allow-non-dns-compliant-host": "true"}
LABEL = (
    "a lowercase RFC 1123 label must be made of lowercase letters, digits or '-', "
    "and must start and end with a letter or digit (e.g. 'web', or '1-abc')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must be made of lowercase letters, digits, '-' or '.', "
    "and must start and end with a letter or digit (e.g. 'www.example.com')"
)
LONG_LABEL = "each part between dots must be no more than 63 characters"
L64 = "a" * 64


def route(spec: dict[str, Any], annotations: dict[str, str]) -> Route:
    raw = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "web", "namespace": "demo", "annotations": annotations},
        "spec": {"to": {"kind": "Service", "name": "web"}, **spec},
    }
    obj = parse_object(raw)
    assert isinstance(obj, Route)
    return obj


# (id, spec, annotations, first error or None)
CASES: list[tuple[str, dict[str, Any], dict[str, str], str | None]] = [
    (
        "long label",
        {"host": f"{L64}.example.com"},
        {},
        f'spec.host: Invalid value: "{L64}.example.com": {LONG_LABEL}',
    ),
    ("long label, annotation true", {"host": f"{L64}.example.com"}, ALLOW, None),
    ("long last label, annotation true", {"host": f"example.{L64}"}, ALLOW, None),
    (
        "253 characters of long labels, annotation true",
        {"host": ".".join(["b" * 126, "c" * 126])},
        ALLOW,
        None,
    ),
    (
        "over 253, annotation true",
        {"host": ".".join(["b" * 127, "c" * 126])},
        ALLOW,
        f'spec.host: Invalid value: "{".".join(["b" * 127, "c" * 126])}": must be no more than 253 characters',
    ),
    (
        "annotation True (not the string true)",
        {"host": f"{L64}.example.com"},
        {"route.openshift.io/allow-non-dns-compliant-host": "True"},
        f'spec.host: Invalid value: "{L64}.example.com": {LONG_LABEL}',
    ),
    (
        "annotation false",
        {"host": f"{L64}.example.com"},
        {"route.openshift.io/allow-non-dns-compliant-host": "false"},
        f'spec.host: Invalid value: "{L64}.example.com": {LONG_LABEL}',
    ),
    (
        "uppercase, annotation true",
        {"host": "Web.example.com"},
        ALLOW,
        f'spec.host: Invalid value: "Web.example.com": {SUBDOMAIN}',
    ),
    ("subdomain label", {"subdomain": "web"}, {}, None),
    ("subdomain of labels", {"subdomain": "web.team"}, {}, None),
    ("subdomain with host", {"subdomain": "web", "host": "a.example.com"}, {}, None),
    (
        "subdomain bad label is the value",
        {"subdomain": "web.Team"},
        {},
        f'spec.subdomain: Invalid value: "Team": {LABEL}',
    ),
    (
        "subdomain empty label",
        {"subdomain": "web..x"},
        {},
        f'spec.subdomain: Invalid value: "": {LABEL}',
    ),
    (
        "subdomain long label, annotation true",
        {"subdomain": L64},
        ALLOW,
        f'spec.subdomain: Invalid value: "{L64}": must be no more than 63 characters',
    ),
    (
        "subdomain over 253",
        {"subdomain": ".".join(["a" * 63] * 4)},
        {},
        f'spec.subdomain: Invalid value: "{".".join(["a" * 63] * 4)}": must be no more than 253 characters',
    ),
]


@pytest.mark.parametrize(
    ("spec", "notes", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_create(spec: dict[str, Any], notes: dict[str, str], want: str | None) -> None:
    found = errors(route(spec, notes))
    assert (str(found[0]) if found else None) == want
