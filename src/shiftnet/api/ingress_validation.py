"""networking.k8s.io/v1 rules as kube-apiserver's Ingress and IngressClass validation.

Same checks, same field paths, same order: rules or a default backend; hosts
are DNS names (``*.`` wildcards allowed), not IP addresses; every path has a
``pathType``, Prefix and Exact paths are clean absolute paths; a backend is a
Service with a port by name or number (not both) or another object; TLS
hosts and Secret names; the legacy class annotation and ``ingressClassName``
not both on create. An IngressClass names a domain-prefixed controller that
never changes.
"""

from __future__ import annotations

import ipaddress
import re

from shiftnet.api import names
from shiftnet.api.fielderrors import (
    FieldError,
    forbidden,
    invalid,
    join,
    not_supported,
    required,
    too_long,
)
from shiftnet.api.ingress import (
    CLASS_ANNOTATION,
    PARAMETER_SCOPES,
    PATH_TYPES,
    HTTPIngressPath,
    Ingress,
    IngressBackend,
    IngressClass,
    IngressClassParametersReference,
    IngressRule,
    TypedLocalObjectReference,
)

INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
CONTROLLER_MAX = 250
_WILDCARD_RE = re.compile(r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a lowercase RFC 1123 "
    "subdomain (e.g. '*.example.com')"
)
_HTTP_PATH_RE = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+\Z")
_SEGMENT_FORBIDDEN = ("/", "%")


def wildcard_subdomain_errors(value: str) -> list[str]:
    """Kubernetes' ``IsWildcardDNS1123Subdomain`` problems of ``value``."""
    out: list[str] = []
    if len(value) > names.DNS1123_SUBDOMAIN_MAX:
        out.append(f"must be no more than {names.DNS1123_SUBDOMAIN_MAX} characters")
    if not _WILDCARD_RE.match(value):
        out.append(_WILDCARD_MSG)
    return out


def _host_errors(path: str, host: str) -> list[FieldError]:
    if "*" in host:
        return [invalid(path, host, m) for m in wildcard_subdomain_errors(host)]
    return [invalid(path, host, m) for m in names.dns1123_subdomain_errors(host)]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _segment_errors(path: str, value: str) -> list[FieldError]:
    """``IsValidPathSegmentName``: the value ends up as one segment of a URL path."""
    if value in (".", ".."):
        return [invalid(path, value, f"may not be '{value}'")]
    return [
        invalid(path, value, f"may not contain '{bad}'")
        for bad in _SEGMENT_FORBIDDEN
        if bad in value
    ]


def _reference_errors(ref: TypedLocalObjectReference, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if ref.api_group is not None:
        out += [
            invalid(join(path, "apiGroup"), ref.api_group, m)
            for m in names.dns1123_subdomain_errors(ref.api_group)
        ]
    if not ref.kind:
        out.append(required(join(path, "kind"), "kind is required"))
    else:
        out += _segment_errors(join(path, "kind"), ref.kind)
    if not ref.name:
        out.append(required(join(path, "name"), "name is required"))
    else:
        out += _segment_errors(join(path, "name"), ref.name)
    return out


def backend_errors(backend: IngressBackend, path: str) -> list[FieldError]:
    """One backend: a Service with a port by name or number, or another object."""
    if backend.resource is not None and backend.service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if backend.resource is not None:
        return _reference_errors(backend.resource, join(path, "resource"))
    service = backend.service
    if service is None:
        return [invalid(path, "", "resource or service backend is required")]
    out: list[FieldError] = []
    name_path = join(path, "service", "name")
    if not service.name:
        out.append(required(name_path))
    else:
        out += [
            invalid(name_path, service.name, m) for m in names.dns1035_label_errors(service.name)
        ]
    port = service.port
    if port.name and port.number:
        out.append(invalid(path, "", "cannot set both port name & port number"))
    elif port.name:
        port_path = join(path, "service", "port", "name")
        out += [invalid(port_path, port.name, m) for m in names.port_name_errors(port.name)]
    elif port.number:
        port_path = join(path, "service", "port", "number")
        out += [invalid(port_path, port.number, m) for m in names.port_number_errors(port.number)]
    else:
        out.append(required(path, "port name or number is required"))
    return out


def _path_errors(p: HTTPIngressPath, path: str) -> list[FieldError]:
    if p.path_type is None:
        return [required(join(path, "pathType"), "pathType must be specified")]
    out: list[FieldError] = []
    value_path = join(path, "path")
    if p.path_type in ("Exact", "Prefix"):
        if not p.path.startswith("/"):
            out.append(invalid(value_path, p.path, "must be an absolute path"))
        if p.path:
            out += [
                invalid(value_path, p.path, f"must not contain '{seq}'")
                for seq in INVALID_PATH_SEQUENCES
                if seq in p.path
            ]
            out += [
                invalid(value_path, p.path, f"cannot end with '{suffix}'")
                for suffix in INVALID_PATH_SUFFIXES
                if p.path.endswith(suffix)
            ]
    elif p.path_type == "ImplementationSpecific":
        if p.path and not p.path.startswith("/"):
            out.append(invalid(value_path, p.path, "must be an absolute path"))
    else:
        out.append(not_supported(join(path, "pathType"), p.path_type, PATH_TYPES))
    return out + backend_errors(p.backend, join(path, "backend"))


def _rule_errors(rule: IngressRule, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if rule.host:
        if _is_ip(rule.host):
            out.append(
                invalid(join(path, "host"), rule.host, "must be a DNS name, not an IP address")
            )
        out += _host_errors(join(path, "host"), rule.host)
    if rule.http is not None:
        http_path = join(path, "http")
        if not rule.http.paths:
            out.append(required(join(http_path, "paths")))
        for i, p in enumerate(rule.http.paths):
            out += _path_errors(p, join(http_path, "paths", i))
    return out


def _spec_errors(ing: Ingress) -> list[FieldError]:
    spec = ing.spec
    out: list[FieldError] = []
    if not spec.rules and spec.default_backend is None:
        out.append(invalid("spec", "[]", "either `defaultBackend` or `rules` must be specified"))
    if spec.default_backend is not None:
        out += backend_errors(spec.default_backend, "spec.defaultBackend")
    for i, rule in enumerate(spec.rules):
        out += _rule_errors(rule, join("spec", "rules", i))
    for i, tls in enumerate(spec.tls):
        tls_path = join("spec", "tls", i)
        for j, host in enumerate(tls.hosts):
            out += _host_errors(join(tls_path, "hosts", j), host)
        if tls.secret_name:
            out += [
                invalid(join(tls_path, "secretName"), tls.secret_name, m)
                for m in names.dns1123_subdomain_errors(tls.secret_name)
            ]
    if spec.ingress_class_name is not None:
        out += [
            invalid("spec.ingressClassName", spec.ingress_class_name, m)
            for m in names.dns1123_subdomain_errors(spec.ingress_class_name)
        ]
    return out


def ingress_errors(ing: Ingress) -> list[FieldError]:
    """Every problem of a new Ingress (``ValidateIngressCreate``)."""
    out = _spec_errors(ing)
    annotated = ing.metadata.annotations.get(CLASS_ANNOTATION)
    if annotated is not None and ing.spec.ingress_class_name is not None:
        out.append(
            invalid(
                f"annotations.{CLASS_ANNOTATION}",
                annotated,
                "can not be set when the class field is also set",
            )
        )
    return out


def ingress_update_errors(ing: Ingress, old: Ingress) -> list[FieldError]:
    """An update: the class annotation check is for creation only, as upstream."""
    return _spec_errors(ing)


def ingress_standing_errors(ing: Ingress) -> list[FieldError]:
    return _spec_errors(ing)


def controller_errors(controller: str, path: str) -> list[FieldError]:
    """``IsDomainPrefixedPath`` with IngressClass's length limit."""
    out: list[FieldError] = []
    if len(controller) > CONTROLLER_MAX:
        out.append(too_long(path, CONTROLLER_MAX))
    if not controller:
        return [*out, required(path)]
    host, slash, rest = controller.partition("/")
    if not slash or not host or not rest:
        problem = 'must be a domain-prefixed path (such as "acme.io/foo")'
        return [*out, invalid(path, controller, problem)]
    out += [invalid(path, host, m) for m in names.dns1123_subdomain_errors(host)]
    if not _HTTP_PATH_RE.match(rest):
        out.append(
            invalid(
                path,
                rest,
                "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
            )
        )
    return out


def _parameters_errors(ref: IngressClassParametersReference, path: str) -> list[FieldError]:
    plain = TypedLocalObjectReference(api_group=ref.api_group, kind=ref.kind, name=ref.name)
    out = _reference_errors(plain, path)
    scope = ref.scope or "Cluster"  # Kubernetes' default
    if scope not in PARAMETER_SCOPES:
        return [*out, not_supported(join(path, "scope"), scope, PARAMETER_SCOPES)]
    ns_path = join(path, "namespace")
    if scope == "Namespace":
        if ref.namespace is None:
            out.append(required(ns_path, "`parameters.scope` is set to 'Namespace'"))
        else:
            out += [
                invalid(ns_path, ref.namespace, m)
                for m in names.dns1123_label_errors(ref.namespace)
            ]
    elif ref.namespace is not None:
        out.append(forbidden(ns_path, "`parameters.scope` is set to 'Cluster'"))
    return out


def ingress_class_errors(ic: IngressClass) -> list[FieldError]:
    out = controller_errors(ic.spec.controller, "spec.controller")
    if ic.spec.parameters is not None:
        out += _parameters_errors(ic.spec.parameters, "spec.parameters")
    return out


def ingress_class_update_errors(ic: IngressClass, old: IngressClass) -> list[FieldError]:
    out: list[FieldError] = []
    if ic.spec.controller != old.spec.controller:
        out.append(invalid("spec.controller", ic.spec.controller, "field is immutable"))
    return out + ingress_class_errors(ic)
