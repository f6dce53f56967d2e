"""Route rules: what OpenShift's API server and its router refuse in a Route.

Two levels, as upstream:

* :func:`route_spec_errors` is API validation (``shiftnet apply`` refuses the
  object): host and path syntax, termination combinations, backends,
  weights; no PEM is read there, as upstream.
  :func:`route_update_errors` is the same for an update, as upstream's
  ``ValidateRouteUpdate``: ``spec.wildcardPolicy`` may not change, and a
  value the update does not touch is kept even when today's create rules
  would refuse it (the host's label check runs only when the host changed,
  the path's ``#``/space check only when the path changed).
  :func:`route_standing_errors` is what every stored Route meets whatever
  its history (the router's guard, and ``apply``'s check before it knows
  whether the object exists).
* :func:`extended_tls_errors` is what the router checks before it serves a
  route (``ExtendedValidationFailed``): each PEM field parses (no certificate
  in the key field, RSA or ECDSA keys), key matches certificate, certificate
  chains to ``caCertificate``, no SHA1/MD5 on CA-signed certificates. The
  checks themselves live in :mod:`shiftnet.api.tls`.
"""

from __future__ import annotations

import datetime as dt
import re

from shiftnet.api import names, route_headers, tls
from shiftnet.api.fielderrors import (
    FieldError,
    invalid,
    join,
    not_supported,
    required,
    too_many,
)
from shiftnet.api.route import Route, RouteTargetReference, TLSConfig
from shiftnet.api.route_external_cert import external_certificate_errors

TERMINATIONS = ("edge", "passthrough", "reencrypt")
EDGE_POLICIES = ("None", "Allow", "Redirect")
PASSTHROUGH_POLICIES = ("None", "Redirect")
WILDCARD_POLICIES = ("None", "Subdomain")
MAX_ALTERNATE_BACKENDS = 3
MAX_WEIGHT = 256
ALLOW_NON_DNS_COMPLIANT_HOST = "route.openshift.io/allow-non-dns-compliant-host"

# Upstream never echoes key material in an error; it names what was redacted.
REDACTED = {
    "certificate": "redacted certificate data",
    "key": "redacted key data",
    "caCertificate": "redacted ca certificate data",
    "destinationCACertificate": "redacted destination ca certificate data",
}


def _tls_fields(t: TLSConfig) -> dict[str, str | None]:
    return {
        "certificate": t.certificate,
        "key": t.key,
        "caCertificate": t.ca_certificate,
        "destinationCACertificate": t.destination_ca_certificate,
    }


def host_errors(route: Route, *, check_labels: bool = True) -> list[FieldError]:
    """``spec.host``: optional; a lowercase DNS subdomain whose labels are <= 63 characters.

    The per-label limit is skipped without ``check_labels`` (an update that
    keeps the host, or whose old host already broke it) and with the
    ``route.openshift.io/allow-non-dns-compliant-host: "true"`` annotation,
    as upstream.
    """
    host = route.spec.host
    if not host:
        return []
    if check_labels and route.metadata.annotations.get(ALLOW_NON_DNS_COMPLIANT_HOST) != "true":
        reasons = names.hostname_errors(host)
    else:
        reasons = names.dns1123_subdomain_errors(host)
    return [invalid("spec.host", host, r) for r in reasons[:1]]


def subdomain_errors(route: Route) -> list[FieldError]:
    """``spec.subdomain``: <= 253 characters, every label a DNS-1123 label (the bad
    label is the error's value), never relaxed by the annotation: as upstream."""
    sub = route.spec.subdomain
    if not sub:
        return []
    out: list[FieldError] = []
    if len(sub) > names.DNS1123_SUBDOMAIN_MAX:
        out.append(
            invalid(
                "spec.subdomain",
                sub,
                f"must be no more than {names.DNS1123_SUBDOMAIN_MAX} characters",
            )
        )
    for label in sub.split("."):
        reasons = names.dns1123_label_errors(label)
        if reasons:
            out.append(invalid("spec.subdomain", label, ", ".join(reasons)))
    return out


# "/" then visible ASCII without "#": a path none of the checks below can object to
# (bar passthrough), recognised by one match.
_PLAIN_PATH_RE = re.compile(r"/[\x21\x22\x24-\x7e]*")


def path_errors(route: Route, *, check_characters: bool = True) -> list[FieldError]:
    """``spec.path``: begins with ``/``; no ``#``, white space or control characters
    (checked only with ``check_characters``: on create, or when an update changes
    the path); no path on a passthrough route."""
    p = route.spec.path
    if not p:
        return []
    out: list[FieldError] = []
    if not _PLAIN_PATH_RE.fullmatch(p):  # else none of these can apply
        if not p.startswith("/"):
            out.append(invalid("spec.path", p, "path must begin with /"))
        if check_characters:
            if "#" in p or any(ch.isspace() for ch in p):
                out.append(invalid("spec.path", p, "cannot contain # or spaces"))
            elif any(not ch.isprintable() for ch in p):
                out.append(invalid("spec.path", p, "path must not contain control characters"))
    if route.spec.tls is not None and route.spec.tls.termination == "passthrough":
        out.append(invalid("spec.path", p, "passthrough termination does not support paths"))
    return out


def _backend_errors(ref: RouteTargetReference, base: str) -> list[FieldError]:
    """A backend needs a non-empty name and nothing more, as upstream: a Service
    that does not exist, or whose name could never be a Service's, has no endpoints."""
    if ref.kind == "Service" and (ref.weight is None or 0 <= ref.weight <= MAX_WEIGHT) and ref.name:
        return []
    out: list[FieldError] = []
    if not ref.name:
        out.append(required(join(base, "name")))
    if ref.kind != "Service":
        out.append(invalid(join(base, "kind"), ref.kind, "must reference a Service"))
    if ref.weight is not None and not 0 <= ref.weight <= MAX_WEIGHT:
        out.append(
            invalid(
                join(base, "weight"),
                ref.weight,
                f"weight must be an integer between 0 and {MAX_WEIGHT}",
            )
        )
    return out


def backend_errors(route: Route) -> list[FieldError]:
    out = _backend_errors(route.spec.to, "spec.to")
    backends = route.spec.alternate_backends
    if len(backends) > MAX_ALTERNATE_BACKENDS:
        out.append(too_many("spec.alternateBackends", len(backends), MAX_ALTERNATE_BACKENDS))
    for i, ref in enumerate(backends):
        out += _backend_errors(ref, join("spec.alternateBackends", i))
    return out


_INT32 = range(-(2**31), 2**31)


def target_port_errors(route: Route) -> list[FieldError]:
    """``spec.port.targetPort``: not 0 and not "", and nothing more, as upstream.

    A number or name no Service port has leaves the route without servers (the
    router says so in a warning); a number must fit the 32 bits the wire gives it.
    """
    if route.spec.port is None:
        return []
    path = "spec.port.targetPort"
    target = route.spec.port.target_port
    if target in (0, ""):
        return [required(path)]
    if isinstance(target, int) and target not in _INT32:
        return [invalid(path, target, "must be a 32-bit integer")]
    return []


def wildcard_errors(route: Route) -> list[FieldError]:
    policy = route.spec.wildcard_policy
    if not policy:
        return []
    if policy not in WILDCARD_POLICIES:
        return [not_supported("spec.wildcardPolicy", policy, WILDCARD_POLICIES)]
    if policy == "Subdomain" and not route.spec.host:
        return [
            invalid("spec.wildcardPolicy", policy, "host name not specified for wildcard policy")
        ]
    return []


def _termination_errors(t: TLSConfig) -> list[FieldError]:
    out: list[FieldError] = []
    if t.termination == "passthrough":
        for name, value in _tls_fields(t).items():
            if value:
                out.append(
                    invalid(
                        join("spec.tls", name),
                        REDACTED[name],
                        "passthrough termination does not support certificates",
                    )
                )
    elif t.termination == "edge":
        if t.destination_ca_certificate:
            out.append(
                invalid(
                    "spec.tls.destinationCACertificate",
                    REDACTED["destinationCACertificate"],
                    "edge termination does not support destination certificates",
                )
            )
    elif t.termination != "reencrypt":
        out.append(not_supported("spec.tls.termination", t.termination, TERMINATIONS))
    return out


def _insecure_policy_errors(t: TLSConfig) -> list[FieldError]:
    policy = t.insecure_edge_termination_policy
    if not policy or t.termination not in TERMINATIONS:
        return []
    allowed = PASSTHROUGH_POLICIES if t.termination == "passthrough" else EDGE_POLICIES
    if policy in allowed:
        return []
    return [
        invalid(
            "spec.tls.insecureEdgeTerminationPolicy",
            policy,
            "invalid value for InsecureEdgeTerminationPolicy option, acceptable values are "
            + ", ".join(allowed)
            + ", or empty",
        )
    ]


def _pem_errors(t: TLSConfig) -> list[FieldError]:
    if t.termination not in ("edge", "reencrypt"):
        return []
    out: list[FieldError] = []
    for name, value in _tls_fields(t).items():
        if not value:
            continue
        path = join("spec.tls", name)
        reason = tls.pem_parse_problem(value, path, expect="key" if name == "key" else "cert")
        if reason:
            out.append(invalid(path, REDACTED[name], reason))
    return out


def tls_errors(route: Route) -> list[FieldError]:
    """API-level ``spec.tls`` rules: termination type, combinations, policy.

    As upstream, the API reads no PEM: the router's extended validation
    (:func:`extended_tls_errors`) parses and checks the material and marks a
    route it cannot serve ``ExtendedValidationFailed``.
    """
    t = route.spec.tls
    if t is None:
        return []
    return _termination_errors(t) + external_certificate_errors(t) + _insecure_policy_errors(t)


def route_spec_errors(route: Route) -> list[FieldError]:
    """Every API-level problem in a Route's spec, in field order."""
    spec = route.spec
    if (  # the common route, which none of the checks below can object to
        spec.tls is None
        and spec.http_headers is None
        and spec.port is None
        and not spec.subdomain
        and not spec.alternate_backends
        and spec.wildcard_policy in (None, "", "None")
        and (not spec.path or _PLAIN_PATH_RE.fullmatch(spec.path))
        and (not spec.host or not names.hostname_errors(spec.host))
        and not _backend_errors(spec.to, "spec.to")
    ):
        return []
    return _all_spec_errors(route)


def _all_spec_errors(
    route: Route, *, check_host_labels: bool = True, check_path_characters: bool = True
) -> list[FieldError]:
    """:func:`route_spec_errors` without its shortcut (the tests compare the two)."""
    return (
        host_errors(route, check_labels=check_host_labels)
        + subdomain_errors(route)
        + wildcard_errors(route)
        + route_headers.http_headers_errors(route)
        + path_errors(route, check_characters=check_path_characters)
        + backend_errors(route)
        + target_port_errors(route)
        + tls_errors(route)
    )


def _wildcard_policy(route: Route) -> str:
    return route.spec.wildcard_policy or "None"  # upstream defaults "" to None


def route_update_errors(route: Route, old: Route) -> list[FieldError]:
    """Every API-level problem in an update of ``old`` to ``route``, as ``ValidateRouteUpdate``.

    The host's per-label check runs only when the host changed and the old
    host passed it (an old non-compliant host grandfathers its successors,
    as upstream); the path's ``#``/space check only when the path changed.
    """
    out: list[FieldError] = []
    if _wildcard_policy(route) != _wildcard_policy(old):
        out.append(invalid("spec.wildcardPolicy", route.spec.wildcard_policy, "field is immutable"))
    elif not route_spec_errors(route):  # the update rules are some of the create rules
        return []
    host_changed = route.spec.host != old.spec.host
    old_labels_ok = not old.spec.host or all(
        names.is_dns1123_label(label) for label in old.spec.host.split(".")
    )
    return out + _all_spec_errors(
        route,
        check_host_labels=host_changed and old_labels_ok,
        check_path_characters=route.spec.path != old.spec.path,
    )


def route_standing_errors(route: Route) -> list[FieldError]:
    """The API-level problems a stored Route cannot have, whatever updates led to it."""
    if not route_spec_errors(route):  # these rules are some of the create rules
        return []
    return _all_spec_errors(route, check_host_labels=False, check_path_characters=False)


def route_warnings(route: Route) -> list[str]:
    """What upstream warns about a Route it accepts (``Warnings``)."""
    if route.spec.host and route.spec.subdomain:
        return ["spec.host is set; spec.subdomain may be ignored"]
    return []


def extended_tls_errors(route: Route, now: dt.datetime | None = None) -> list[FieldError]:
    """The router's deeper TLS checks (its ``ExtendedValidationFailed``); [] when fine.

    Runs the API checks first, so a route that skipped API validation is still
    refused here; then each PEM field must parse (the API reads no PEM, as
    upstream), then the deeper checks at time ``now`` (the caller's clock:
    expired or not-yet-valid certificates are served, but the dates decide
    which chain checks run, as upstream; see :mod:`shiftnet.api.tls_chain`).
    """
    t = route.spec.tls
    if t is None:
        return []
    out = tls_errors(route) or _pem_errors(t)
    if out:
        return out
    given = {join("spec.tls", name): bool(value) for name, value in _tls_fields(t).items()}
    return [  # an empty field is shown as "", as upstream ("no key specified")
        invalid(
            p.field,
            REDACTED.get(p.field.rsplit(".", 1)[-1], "") if given.get(p.field) else "",
            p.reason,
        )
        for p in tls.route_tls_problems(t, now)
    ]
