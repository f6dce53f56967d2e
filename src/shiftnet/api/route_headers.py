"""Header actions (``spec.httpHeaders.actions``): their grammar and their validation.

Why one module: the same rules decide what ``apply`` accepts in a Route, what
the router accepts in its router-wide actions (``ROUTER_HTTP_REQUEST_HEADERS``,
``ROUTER_HTTP_RESPONSE_HEADERS``) and, through ``router/haproxy/escape.py``,
what may be written into HAProxy's configuration. They are OpenShift's:

* a name is an HTTP token (RFC 7230) of at most 255 characters, unique in its
  list; ``Strict-Transport-Security``, ``Proxy``, ``Cookie`` and ``Set-Cookie``
  are reserved (router-wide actions also may not touch ``Host``);
* a ``Set`` value (1 to 16384 bytes) is an HAProxy log-format string limited
  to ``%%`` and ``%[...]`` / ``%{flags}[...]`` with the sample fetches
  ``req.hdr(<name>)`` (requests) or ``res.hdr(<name>)`` (responses) and
  ``ssl_c_der``, each followed by any of the converters ``lower`` and
  ``base64``; every other character is plain text, ASCII controls excepted.

Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from shiftnet.api.fielderrors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    join,
    required,
)
from shiftnet.api.route import Route, RouteHTTPHeader

REQUEST = "request"
RESPONSE = "response"
SET = "Set"
DELETE = "Delete"
MAX_ACTIONS = 20
MAX_NAME_LENGTH = 255
MAX_VALUE_LENGTH = 16384
RESERVED_NAMES = ("strict-transport-security", "proxy", "cookie", "set-cookie")
# The IngressController's actions also may not change Host.
ROUTER_RESERVED_NAMES = (*RESERVED_NAMES, "host")

NAME_RE = re.compile(r"[-!#$%&'*+.0-9A-Z^_`a-z|~]+")
_VALUE_TEMPLATE = (
    r"(?:%(?:%|(?:\{[-+]?[QXE](?:,[-+]?[QXE])*\})?\[(?:FETCH\.hdr\([0-9A-Za-z-]+\)|ssl_c_der)"
    r"(?:,(?:lower|base64))*\])|[^%\x00-\x1f\x7f])+"
)
VALUE_RE = {
    REQUEST: re.compile(_VALUE_TEMPLATE.replace("FETCH", "req")),
    RESPONSE: re.compile(_VALUE_TEMPLATE.replace("FETCH", "res")),
}
NAME_MESSAGE = "name must be a valid HTTP header name as defined in RFC 2616 section 4.2"
_VALUE_MESSAGE = (
    "Either header value provided is not in correct format or the converter specified is not "
    "allowed. The dynamic header value may use HAProxy's %[] syntax and otherwise must be a "
    "valid HTTP header value as defined in https://datatracker.ietf.org/doc/html/rfc7230"
    "#section-3.2 Sample fetchers allowed are {fetch}.hdr, ssl_c_der. Converters allowed are "
    "lower, base64."
)
VALUE_MESSAGE = {
    REQUEST: _VALUE_MESSAGE.format(fetch="req"),
    RESPONSE: _VALUE_MESSAGE.format(fetch="res"),
}
PASSTHROUGH_MESSAGE = (
    "only edge and re-encrypt routes are supported for providing customized headers "
    "(spec.httpHeaders.actions)"
)


class HeaderAction(NamedTuple):
    """One checked action as the router applies it: set ``name`` to ``value``, or delete it."""

    name: str
    value: str | None  # None: Delete


class HeaderActions(NamedTuple):
    """A route's checked actions, each list in the order given."""

    request: tuple[HeaderAction, ...] = ()
    response: tuple[HeaderAction, ...] = ()


NO_HEADER_ACTIONS = HeaderActions()


# ---------------------------------------------------------------- single values


def name_problem(name: str, reserved: tuple[str, ...] = RESERVED_NAMES) -> str | None:
    """Why ``name`` cannot be a header action's name; None when it can."""
    if not name:
        return "name is required"
    if len(name) > MAX_NAME_LENGTH:
        return f"name exceeds the maximum length, which is {MAX_NAME_LENGTH}"
    if name.lower() in reserved:
        return reserved_message(reserved)
    if not NAME_RE.fullmatch(name):
        return NAME_MESSAGE
    return None


def reserved_message(reserved: tuple[str, ...] = RESERVED_NAMES) -> str:
    return "the following headers may not be modified using this API: " + ", ".join(reserved)


def value_problem(value: str, direction: str) -> str | None:
    """Why ``value`` cannot be set on a ``direction`` (request/response) header; None if it can."""
    if not value:
        return "value is required"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_LENGTH:
        return f"value exceeds the maximum length, which is {MAX_VALUE_LENGTH}"
    if not VALUE_RE[direction].fullmatch(value):
        return VALUE_MESSAGE[direction]
    return None


# ---------------------------------------------------------------- a Route


def _list_errors(path: str, headers: list[RouteHTTPHeader], direction: str) -> list[FieldError]:
    """One list of actions, as OpenShift's ``validateHeaders``."""
    out: list[FieldError] = []
    seen: set[str] = set()
    for i, header in enumerate(headers):
        base = join(path, i)
        name_path = join(base, "name")
        if header.name in seen:
            out.append(duplicate(name_path, header.name))
        seen.add(header.name)
        problem = name_problem(header.name)
        if not header.name:
            out.append(required(name_path))
        elif problem is not None and header.name.lower() in RESERVED_NAMES:
            out.append(forbidden(name_path, problem))
        elif problem is not None:
            out.append(invalid(name_path, header.name, problem))
        action = header.action
        if action.type not in (SET, DELETE):
            out.append(
                invalid(
                    join(base, "action.type"), action.type, f'type must be "{SET}" or "{DELETE}"'
                )
            )
        if (action.type == SET) != (action.set is not None):
            out.append(
                required(
                    join(base, "action.set"),
                    "set is required when type is Set, and forbidden otherwise",
                )
            )
        if action.set is not None:
            value = action.set.value
            value_path = join(base, "action.set.value")
            reason = value_problem(value, direction)
            if not value:
                out.append(required(value_path))
            elif reason is not None:
                out.append(invalid(value_path, value, reason))
    return out


def http_headers_errors(route: Route) -> list[FieldError]:
    """Every problem in ``spec.httpHeaders`` (API validation, in OpenShift's order)."""
    headers = route.spec.http_headers
    if headers is None:
        return []
    actions = headers.actions
    out: list[FieldError] = []
    tls = route.spec.tls
    passthrough = tls is not None and tls.termination == "passthrough"
    if (actions.response or actions.request) and passthrough:
        out.append(invalid("spec.tls.termination", "passthrough", PASSTHROUGH_MESSAGE))
    path = "spec.httpHeaders.actions"
    for direction, items in ((RESPONSE, actions.response), (REQUEST, actions.request)):
        where = join(path, direction)
        if len(items) > MAX_ACTIONS:
            out.append(
                invalid(
                    where,
                    len(items),
                    f"{direction} headers list can't exceed {MAX_ACTIONS} items",
                )
            )
        else:
            out += _list_errors(where, items, direction)
    return out


def route_header_actions(route: Route) -> HeaderActions:
    """A validated Route's actions as the router applies them (none on passthrough)."""
    headers = route.spec.http_headers
    if headers is None or (
        route.spec.tls is not None and route.spec.tls.termination == "passthrough"
    ):
        return NO_HEADER_ACTIONS
    actions = headers.actions
    if not actions.request and not actions.response:
        return NO_HEADER_ACTIONS
    return HeaderActions(
        tuple(_action(h) for h in actions.request), tuple(_action(h) for h in actions.response)
    )


def _action(header: RouteHTTPHeader) -> HeaderAction:
    action = header.action
    value = action.set.value if action.type == SET and action.set is not None else None
    return HeaderAction(header.name, value)


# ---------------------------------------------------------------- router-wide actions


def parse_router_actions(text: str, direction: str) -> tuple[HeaderAction, ...]:
    """Router-wide actions in the OpenShift router's form: ``name:value:Set`` and
    ``name:Delete`` items separated by commas, each part percent-encoded (``+`` is a
    space), as the ingress operator writes ``ROUTER_HTTP_REQUEST_HEADERS``.

    The same rules as a Route's, with ``Host`` reserved too. Raises ``ValueError``
    naming the item.
    """
    out: list[HeaderAction] = []
    seen: set[str] = set()
    for item in text.split(","):
        parts = [_unescape(p, item) for p in item.split(":")]
        if len(parts) == 3 and parts[2] == SET:
            name, value = parts[0], parts[1]
            reason = value_problem(value, direction)
            if reason is not None:
                raise ValueError(f"{item!r}: {reason}")
        elif len(parts) == 2 and parts[1] == DELETE:
            name, value = parts[0], None
        else:
            raise ValueError(f"{item!r} is not name:value:Set or name:Delete")
        problem = name_problem(name, ROUTER_RESERVED_NAMES)
        if problem is not None:
            raise ValueError(f"{item!r}: {problem}")
        if name in seen:
            raise ValueError(f"{item!r}: header {name!r} appears twice")
        seen.add(name)
        out.append(HeaderAction(name, value))
    if len(out) > MAX_ACTIONS:
        raise ValueError(f"{direction} headers list can't exceed {MAX_ACTIONS} items")
    return tuple(out)


_ESCAPE_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _unescape(part: str, item: str) -> str:
    """Go's ``url.QueryUnescape``: ``+`` is a space, ``%hh`` a byte; a lone ``%`` is an error."""
    if _ESCAPE_RE.search(part):
        raise ValueError(f"{item!r}: failed to decode percent encoding")
    raw = bytearray()
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "%":
            raw.append(int(part[i + 1 : i + 3], 16))
            i += 3
            continue
        raw += b" " if ch == "+" else ch.encode()
        i += 1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{item!r}: percent encoding is not UTF-8") from None
