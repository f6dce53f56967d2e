"""``metadata`` rules every kind shares: name, namespace, label and annotation syntax."""

from __future__ import annotations

from collections.abc import Callable

from shiftnet.api import names
from shiftnet.api.base import Resource
from shiftnet.api.fielderrors import FieldError, forbidden, invalid, required, too_long

NameRule = Callable[[str], list[str]]

# Kubernetes validates most names as DNS-1123 subdomains; these kinds become a
# single DNS label (a namespace is one label of every service name under it, a
# Service name is the first label of its DNS name).
NAME_RULES: dict[str, NameRule] = {
    "Namespace": names.dns1123_label_errors,
    "Service": names.dns1123_label_errors,
}
TOTAL_ANNOTATION_SIZE = 256 * 1024


def name_rule(kind: str) -> NameRule:
    return NAME_RULES.get(kind, names.dns1123_subdomain_errors)


def label_errors(labels: dict[str, str], path: str) -> list[FieldError]:
    """Label keys are qualified names, values label values; both reported at ``path``."""
    out: list[FieldError] = []
    for key in sorted(labels):
        out += [invalid(path, key, r) for r in names.qualified_name_errors(key)[:1]]
        value = labels[key]
        out += [invalid(path, value, r) for r in names.label_value_errors(value)[:1]]
    return out


def annotation_errors(annotations: dict[str, str], path: str) -> list[FieldError]:
    out: list[FieldError] = []
    for key in sorted(annotations):
        out += [invalid(path, key, r) for r in names.qualified_name_errors(key.lower())[:1]]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE:
        out.append(too_long(path, TOTAL_ANNOTATION_SIZE))
    return out


def meta_errors(obj: Resource) -> list[FieldError]:
    """Problems in ``obj.metadata`` for its kind (name rule, namespace scope)."""
    m = obj.metadata
    out: list[FieldError] = []
    if not m.name:
        out.append(required("metadata.name", "name or generateName is required"))
    else:
        out += [invalid("metadata.name", m.name, r) for r in name_rule(obj.KIND)(m.name)[:1]]
    if obj.NAMESPACED:
        if not m.namespace:
            out.append(required("metadata.namespace"))
        else:
            out += [
                invalid("metadata.namespace", m.namespace, r)
                for r in names.dns1123_label_errors(m.namespace)[:1]
            ]
    elif m.namespace:
        out.append(forbidden("metadata.namespace", "not allowed on this type"))
    if m.generation is not None and m.generation < 0:
        out.append(
            invalid("metadata.generation", m.generation, "must be greater than or equal to 0")
        )
    out += label_errors(m.labels, "metadata.labels")
    out += annotation_errors(m.annotations, "metadata.annotations")
    return out
