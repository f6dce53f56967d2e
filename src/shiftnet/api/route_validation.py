"""Route rules: what OpenShift's API server and its router refuse in a Route.

Two levels, as upstream:

* :func:`route_spec_errors` is API validation (``shiftnet apply`` refuses the
  object): host and path syntax, termination combinations, backends, weights,
  and "does each PEM field parse".
* :func:`extended_tls_errors` is what the router checks before it serves a
  route (``ExtendedValidationFailed``): key matches certificate, certificate
  chains to ``caCertificate``, no SHA1/MD5 on CA-signed certificates.
"""

from __future__ import annotations

from shiftnet.api import names, tls
from shiftnet.api.fielderrors import (
    FieldError,
    invalid,
    join,
    not_supported,
    required,
    too_many,
)
from shiftnet.api.route import Route, RouteTargetReference, TLSConfig

TERMINATIONS = ("edge", "passthrough", "reencrypt")
EDGE_POLICIES = ("None", "Allow", "Redirect")
PASSTHROUGH_POLICIES = ("None", "Redirect")
WILDCARD_POLICIES = ("None", "Subdomain")
MAX_ALTERNATE_BACKENDS = 3
MAX_WEIGHT = 256
ALLOW_NON_DNS_COMPLIANT_HOST = "route.openshift.io/allow-non-dns-compliant-host"

_REDACTED = {
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


def host_errors(route: Route, path: str = "spec.host") -> list[FieldError]:
    host = route.spec.host
    if not host:
        return []
    if route.metadata.annotations.get(ALLOW_NON_DNS_COMPLIANT_HOST) == "true":
        reasons = names.dns1123_subdomain_errors(host)
    else:
        reasons = names.hostname_errors(host)
    return [invalid(path, host, r) for r in reasons[:1]]


def path_errors(route: Route) -> list[FieldError]:
    p = route.spec.path
    if not p:
        return []
    out: list[FieldError] = []
    if not p.startswith("/"):
        out.append(invalid("spec.path", p, "path must begin with /"))
    if "#" in p:
        out.append(invalid("spec.path", p, "path must not contain '#'"))
    if any(ch.isspace() for ch in p):
        out.append(invalid("spec.path", p, "path must not contain spaces"))
    if any(not ch.isprintable() and not ch.isspace() for ch in p):
        out.append(invalid("spec.path", p, "path must not contain control characters"))
    if route.spec.tls is not None and route.spec.tls.termination == "passthrough":
        out.append(invalid("spec.path", p, "passthrough termination does not support paths"))
    return out


def _backend_errors(ref: RouteTargetReference, base: str) -> list[FieldError]:
    out: list[FieldError] = []
    if not ref.name:
        out.append(required(join(base, "name")))
    else:
        out += [
            invalid(join(base, "name"), ref.name, r)
            for r in names.dns1035_label_errors(ref.name)[:1]
        ]
    if ref.kind not in ("Service", ""):  # "" is defaulted to Service upstream
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


def _target_port_errors(route: Route) -> list[FieldError]:
    if route.spec.port is None:
        return []
    path = "spec.port.targetPort"
    target = route.spec.port.target_port
    if isinstance(target, int):
        if target == 0:
            return [required(path)]
        return [invalid(path, target, r) for r in names.port_number_errors(target)]
    if target == "":
        return [required(path)]
    if target.isdigit():
        return [invalid(path, target, r) for r in names.port_number_errors(int(target))]
    return [invalid(path, target, r) for r in names.port_name_errors(target)[:1]]


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


def tls_errors(route: Route) -> list[FieldError]:
    t = route.spec.tls
    if t is None:
        return []
    out: list[FieldError] = []
    fields = _tls_fields(t)
    if t.termination == "passthrough":
        for name, value in fields.items():
            if value:
                out.append(
                    invalid(
                        join("spec.tls", name),
                        _REDACTED[name],
                        "passthrough termination does not support certificates",
                    )
                )
    elif t.termination == "edge":
        if t.destination_ca_certificate:
            out.append(
                invalid(
                    "spec.tls.destinationCACertificate",
                    _REDACTED["destinationCACertificate"],
                    "edge termination does not support destination certificates",
                )
            )
    elif t.termination != "reencrypt":
        out.append(not_supported("spec.tls.termination", t.termination, TERMINATIONS))

    policy = t.insecure_edge_termination_policy
    if policy:
        allowed = PASSTHROUGH_POLICIES if t.termination == "passthrough" else EDGE_POLICIES
        if t.termination in TERMINATIONS and policy not in allowed:
            out.append(
                invalid(
                    "spec.tls.insecureEdgeTerminationPolicy",
                    policy,
                    "invalid value for InsecureEdgeTerminationPolicy option, acceptable values are "
                    + ", ".join(allowed)
                    + ", or empty",
                )
            )

    if t.termination in ("edge", "reencrypt"):
        for name, value in fields.items():
            if not value:
                continue
            path = join("spec.tls", name)
            reason = tls.pem_parse_problem(
                value, path, expect="key" if name == "key" else "certificate"
            )
            if reason:
                out.append(invalid(path, _REDACTED[name], reason))
    return out


def route_spec_errors(route: Route) -> list[FieldError]:
    """Every API-level problem in a Route's spec, in field order."""
    out: list[FieldError] = []
    out += host_errors(route)
    if route.spec.subdomain:
        out += [
            invalid("spec.subdomain", route.spec.subdomain, r)
            for r in names.dns1123_subdomain_errors(route.spec.subdomain)[:1]
        ]
    out += wildcard_errors(route)
    out += path_errors(route)
    out += _backend_errors(route.spec.to, "spec.to")
    backends = route.spec.alternate_backends
    if len(backends) > MAX_ALTERNATE_BACKENDS:
        out.append(too_many("spec.alternateBackends", len(backends), MAX_ALTERNATE_BACKENDS))
    for i, ref in enumerate(backends):
        out += _backend_errors(ref, join("spec.alternateBackends", i))
    out += _target_port_errors(route)
    out += tls_errors(route)
    return out


def extended_tls_errors(route: Route) -> list[FieldError]:
    """The router's deeper TLS checks (its ``ExtendedValidationFailed``); [] when fine.

    Runs the API checks first, so a route that skipped API validation is still
    refused here. Expired or not-yet-valid certificates are accepted.
    """
    t = route.spec.tls
    if t is None:
        return []
    out = tls_errors(route)
    if out or t.termination == "passthrough":
        return out

    def bad(name: str, err: tls.CertificateError) -> FieldError:
        return invalid(
            err.field, _REDACTED.get(err.field.rsplit(".", 1)[-1], _REDACTED[name]), err.reason
        )

    roots = []
    if t.ca_certificate:
        try:
            roots = tls.parse_certificates(t.ca_certificate, "spec.tls.caCertificate")
            tls.check_signature_algorithms(roots, "spec.tls.caCertificate")
        except tls.CertificateError as err:
            out.append(bad("caCertificate", err))

    if t.certificate:
        try:
            certs, embedded_key = tls.split_certificates_and_key(
                t.certificate, "spec.tls.certificate"
            )
            if not certs:
                raise tls.CertificateError("spec.tls.certificate", "no PEM certificate found")
            tls.check_signature_algorithms(certs, "spec.tls.certificate")
            if roots:
                tls.verify_chain(certs[0], roots, certs[1:] + roots)
            key = embedded_key
            if t.key:
                key = tls.parse_private_key(t.key, "spec.tls.key")
            if key is None:
                out.append(invalid("spec.tls.key", "", "no key specified"))
            else:
                tls.check_key_pair(certs[0], key, key_field="spec.tls.key")
        except tls.CertificateError as err:
            out.append(bad("certificate", err))
    elif t.key:
        try:
            tls.parse_private_key(t.key, "spec.tls.key")
        except tls.CertificateError as err:
            out.append(bad("key", err))

    if t.destination_ca_certificate:
        field = "spec.tls.destinationCACertificate"
        try:
            dest = tls.parse_certificates(t.destination_ca_certificate, field)
            tls.check_signature_algorithms(dest, field)
        except tls.CertificateError as err:
            out.append(bad("destinationCACertificate", err))
    return out
