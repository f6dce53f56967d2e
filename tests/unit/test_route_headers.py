"""spec.httpHeaders: OpenShift's header-name rules and value grammar, as case tables.

The tables follow OpenShift's published validation (library-go's
``validateHeaders`` and the Route CRD's rules): what ``apply`` accepts and
refuses, with the field path named, in both directions (request values may
fetch ``req.hdr``, response values ``res.hdr``; both ``ssl_c_der``; the
converters ``lower`` and ``base64`` only).
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from shiftnet.api import Route
from shiftnet.api.route_headers import (
    REQUEST,
    RESPONSE,
    HeaderAction,
    HeaderActions,
    name_problem,
    parse_router_actions,
    route_header_actions,
    value_problem,
)
from shiftnet.api.route_validation import _all_spec_errors, route_spec_errors
from shiftnet.api.validation import validate
from shiftnet.errors import InvalidObject

# Values both directions accept.
VALID_BOTH = [
    "plain",
    "a value with spaces",
    "max-age=31536000",
    "%%",
    "100%%",
    "%[ssl_c_der]",
    "%[ssl_c_der,base64]",
    "%{+Q}[ssl_c_der,base64]",
    "%{-Q}[ssl_c_der]",
    "%{+X}[ssl_c_der,lower,base64]",
    "%{+Q,-E}[ssl_c_der,base64,lower]",
    "%{Q}[ssl_c_der]",
    "quote\"and'apostrophe",
    "back\\slash",
    "$HOME and #hash",
    "{}[]()<>@,;:/?=",
    "é unicode ✓",
    "x" * 16384,
]
# (request-only value, the same with res.hdr for responses)
DIRECTIONAL = [
    ("%[req.hdr(Host)]", "%[res.hdr(Host)]"),
    ("%[req.hdr(host),lower]", "%[res.hdr(X-Target),lower]"),
    ("pre %[req.hdr(X-A),base64] post", "pre %[res.hdr(X-A),base64] post"),
    ("%{+Q}[req.hdr(X-1-b)]", "%{+Q}[res.hdr(X-1-b)]"),
]
INVALID_BOTH = [
    ("", "value is required"),
    ("x" * 16385, "exceeds the maximum length"),
    ("é" * 8193, "exceeds the maximum length"),  # 16386 bytes: the limit counts bytes
    ("%", "not in correct format"),
    ("100%", "not in correct format"),
    ("%[src]", "not in correct format"),
    ("%[env(SECRET)]", "not in correct format"),
    ("%[req.hdr(Host),url_dec]", "not in correct format"),
    ("%[ssl_c_der,hex]", "not in correct format"),
    ("%[ssl_c_der", "not in correct format"),
    ("%{+Z}[ssl_c_der]", "not in correct format"),
    ("%{}[ssl_c_der]", "not in correct format"),
    ("%{+Q}", "not in correct format"),
    ("%ci", "not in correct format"),  # log-format variables other than %[...]
    ("%[req.hdr(Ho st)]", "not in correct format"),
    ("%[req.hdr()]", "not in correct format"),
    ("%[req.hdr(a_b)]", "not in correct format"),
    ("%[ req.hdr(a)]", "not in correct format"),
    ("%[req.hdr(a), lower]", "not in correct format"),
    ("%[req.fhdr(a)]", "not in correct format"),
    ("line\nbreak", "not in correct format"),
    ("trailing newline\n", "not in correct format"),
    ("cr\rlf", "not in correct format"),
    ("tab\there", "not in correct format"),
    ("nul\x00", "not in correct format"),
    ("del\x7f", "not in correct format"),
]


@pytest.mark.parametrize("value", VALID_BOTH)
@pytest.mark.parametrize("direction", [REQUEST, RESPONSE])
def test_values_both_directions_accept(value: str, direction: str) -> None:
    assert value_problem(value, direction) is None


@pytest.mark.parametrize(("request_value", "response_value"), DIRECTIONAL)
def test_header_fetches_belong_to_their_direction(request_value: str, response_value: str) -> None:
    assert value_problem(request_value, REQUEST) is None
    assert value_problem(response_value, RESPONSE) is None
    assert "Sample fetchers allowed are res.hdr" in (value_problem(request_value, RESPONSE) or "")
    assert "Sample fetchers allowed are req.hdr" in (value_problem(response_value, REQUEST) or "")


@pytest.mark.parametrize(("value", "reason"), INVALID_BOTH)
@pytest.mark.parametrize("direction", [REQUEST, RESPONSE])
def test_values_both_directions_refuse(value: str, reason: str, direction: str) -> None:
    assert reason in (value_problem(value, direction) or "")


def test_a_closing_bracket_after_a_fetch_is_plain_text() -> None:
    # Upstream's grammar: "]" outside %[...] is an ordinary character.
    assert value_problem("%[ssl_c_der]]", REQUEST) is None


VALID_NAMES = [
    "X-Frame-Options",
    "x",
    "!#$%&'*+.^_`|~-09AZaz",
    "Content-Location",
    "Host",
    "a" * 255,
]
INVALID_NAMES = [
    ("", "required"),
    ("a" * 256, "exceeds the maximum length, which is 255"),
    ("X Y", "valid HTTP header name"),
    ("X:Y", "valid HTTP header name"),
    ("X\nY", "valid HTTP header name"),
    ('X"', "valid HTTP header name"),
    ("(x)", "valid HTTP header name"),
    ("é", "valid HTTP header name"),
    ("Strict-Transport-Security", "may not be modified"),
    ("strict-transport-security", "may not be modified"),
    ("PROXY", "may not be modified"),
    ("Cookie", "may not be modified"),
    ("set-cookie", "may not be modified"),
]


@pytest.mark.parametrize("name", VALID_NAMES)
def test_names_accepted(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(("name", "reason"), INVALID_NAMES)
def test_names_refused(name: str, reason: str) -> None:
    assert reason in (name_problem(name) or "")


# ---------------------------------------------------------------- whole Routes


def _route(
    request: list[dict[str, Any]] | None = None,
    response: list[dict[str, Any]] | None = None,
    termination: str | None = None,
) -> Route:
    spec: dict[str, Any] = {
        "host": "h.example.com",
        "to": {"name": "svc"},
        "httpHeaders": {"actions": {"request": request or [], "response": response or []}},
    }
    if termination:
        spec["tls"] = {"termination": termination}
    return Route.model_validate({"metadata": {"name": "r", "namespace": "ns"}, "spec": spec})


def set_(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "action": {"type": "Set", "set": {"value": value}}}


def delete(name: str) -> dict[str, Any]:
    return {"name": name, "action": {"type": "Delete"}}


def _errors(route: Route) -> list[str]:
    found = [str(e) for e in route_spec_errors(route)]
    assert found == [str(e) for e in _all_spec_errors(route)]  # no shortcut hides one
    return found


@pytest.mark.parametrize("termination", [None, "edge", "reencrypt"])
def test_valid_actions_on_http_edge_and_reencrypt(termination: str | None) -> None:
    route = _route(
        [set_("X-Forwarded-Client-Cert", "%{+Q}[ssl_c_der,base64]"), delete("X-Powered-By")],
        [set_("X-Frame-Options", "DENY"), set_("X-Target", "%[res.hdr(X-Target),lower]")],
        termination,
    )
    assert _errors(route) == []
    assert route_header_actions(route) == HeaderActions(
        (
            HeaderAction("X-Forwarded-Client-Cert", "%{+Q}[ssl_c_der,base64]"),
            HeaderAction("X-Powered-By", None),
        ),
        (
            HeaderAction("X-Frame-Options", "DENY"),
            HeaderAction("X-Target", "%[res.hdr(X-Target),lower]"),
        ),
    )


def test_refused_on_passthrough_naming_the_field() -> None:
    route = _route([set_("X-A", "1")], termination="passthrough")
    (error,) = _errors(route)
    assert error.startswith('spec.tls.termination: Invalid value: "passthrough": ')
    assert "spec.httpHeaders.actions" in error
    # Empty lists on a passthrough route are fine (nothing to apply).
    assert _errors(_route(termination="passthrough")) == []


@pytest.mark.parametrize("direction", ["request", "response"])
def test_at_most_20_actions_each(direction: str) -> None:
    twenty = [set_(f"X-{i}", "v") for i in range(20)]
    assert _errors(_route(**{direction: twenty})) == []
    (error,) = _errors(_route(**{direction: [*twenty, delete("X-20")]}))
    assert error == (
        f"spec.httpHeaders.actions.{direction}: Invalid value: 21: "
        f"{direction} headers list can't exceed 20 items"
    )


CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "duplicate name",
        {"request": [set_("X-A", "1"), delete("X-A")]},
        ['spec.httpHeaders.actions.request[1].name: Duplicate value: "X-A"'],
    ),
    (
        "same name differently cased is not a duplicate (as upstream)",
        {"request": [set_("X-A", "1"), delete("x-a")]},
        [],
    ),
    (
        "same name in both lists",
        {"request": [delete("X-A")], "response": [delete("X-A")]},
        [],
    ),
    (
        "empty name",
        {"response": [delete("")]},
        ["spec.httpHeaders.actions.response[0].name: Required value"],
    ),
    (
        "reserved name",
        {"response": [delete("Set-Cookie")]},
        [
            "spec.httpHeaders.actions.response[0].name: Forbidden: the following headers may "
            "not be modified using this API: strict-transport-security, proxy, cookie, set-cookie"
        ],
    ),
    (
        "bad name",
        {"request": [delete("X Y")]},
        [
            'spec.httpHeaders.actions.request[0].name: Invalid value: "X Y": name must be a '
            "valid HTTP header name as defined in RFC 2616 section 4.2"
        ],
    ),
    (
        "unknown type",
        {"request": [{"name": "X", "action": {"type": "Append"}}]},
        [
            'spec.httpHeaders.actions.request[0].action.type: Invalid value: "Append": '
            'type must be "Set" or "Delete"'
        ],
    ),
    (
        "Set without set",
        {"request": [{"name": "X", "action": {"type": "Set"}}]},
        [
            "spec.httpHeaders.actions.request[0].action.set: Required value: set is required "
            "when type is Set, and forbidden otherwise"
        ],
    ),
    (
        "Delete with set",
        {"request": [{"name": "X", "action": {"type": "Delete", "set": {"value": "v"}}}]},
        [
            "spec.httpHeaders.actions.request[0].action.set: Required value: set is required "
            "when type is Set, and forbidden otherwise"
        ],
    ),
    (
        "empty value",
        {"response": [set_("X", "")]},
        ["spec.httpHeaders.actions.response[0].action.set.value: Required value"],
    ),
    (
        "request fetch in a response",
        {"response": [set_("X", "%[req.hdr(Host)]")]},
        [
            "spec.httpHeaders.actions.response[0].action.set.value: Invalid value: "
            '"%[req.hdr(Host)]": Either header value provided is not in correct format'
        ],
    ),
    (
        "response list checked before request list",
        {"request": [set_("X", "%[src]")], "response": [set_("Y", "%[src]")]},
        [
            "spec.httpHeaders.actions.response[0].action.set.value",
            "spec.httpHeaders.actions.request[0].action.set.value",
        ],
    ),
]


@pytest.mark.parametrize(("what", "actions", "expected"), CASES, ids=[c[0] for c in CASES])
def test_route_cases(what: str, actions: dict[str, Any], expected: list[str]) -> None:
    found = _errors(_route(**actions))
    assert len(found) == len(expected), found
    for got, want in zip(found, expected, strict=True):
        assert got.startswith(want), (got, want)


def test_apply_refuses_with_one_sentence_naming_object_and_field() -> None:
    with pytest.raises(InvalidObject) as caught:
        validate(_route([set_("X-Leak", "%[env(HOME)]")]))
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(
        'Route "r" is invalid: spec.httpHeaders.actions.request[0].action.set.value: '
        'Invalid value: "%[env(HOME)]": '
    )


def test_unknown_fields_in_http_headers_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        Route.model_validate(
            {
                "metadata": {"name": "r", "namespace": "ns"},
                "spec": {"to": {"name": "s"}, "httpHeaders": {"actions": {"requests": []}}},
            }
        )
    assert "requests" in str(caught.value)


def test_wire_shape_round_trips() -> None:
    route = _route([set_("X-A", "%[req.hdr(Host)]")], [delete("Server")])
    wire = route.to_dict()["spec"]["httpHeaders"]
    assert wire == {
        "actions": {
            "request": [
                {"name": "X-A", "action": {"type": "Set", "set": {"value": "%[req.hdr(Host)]"}}}
            ],
            "response": [{"name": "Server", "action": {"type": "Delete"}}],
        }
    }
    assert Route.model_validate(route.to_dict()) == route


# ---------------------------------------------------------------- router-wide actions


def test_router_wide_actions_parse_as_the_openshift_router_reads_them() -> None:
    text = "X-Frame-Options:DENY:Set,X-Powered-By:Delete,X-Client:%25%5Bssl_c_der%2Cbase64%5D:Set"
    assert parse_router_actions(text, RESPONSE) == (
        HeaderAction("X-Frame-Options", "DENY"),
        HeaderAction("X-Powered-By", None),
        HeaderAction("X-Client", "%[ssl_c_der,base64]"),
    )
    assert parse_router_actions("X-A:a+b%3Ac:Set", REQUEST) == (HeaderAction("X-A", "a b:c"),)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("X-A", "is not name:value:Set or name:Delete"),
        ("X-A:v:Add", "is not name:value:Set or name:Delete"),
        ("X-A:v:Delete", "is not name:value:Set or name:Delete"),
        ("X-A:Set", "is not name:value:Set or name:Delete"),
        ("X-A:%zz:Set", "failed to decode percent encoding"),
        ("X-A:%25%5Bsrc%5D:Set", "not in correct format"),
        ("X-A:%0Aevil:Set", "not in correct format"),
        ("Host:x:Set", "may not be modified"),  # the IngressController also reserves Host
        ("Cookie:Delete", "may not be modified"),
        ("X%20Y:Delete", "valid HTTP header name"),
        ("X-A:Delete,X-A:Delete", "appears twice"),
        (",".join(f"X-{i}:Delete" for i in range(21)), "can't exceed 20 items"),
    ],
)
def test_router_wide_actions_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        parse_router_actions(text, REQUEST)
    assert reason in str(caught.value)
