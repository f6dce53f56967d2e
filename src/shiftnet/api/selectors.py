"""Kubernetes label selectors: ``a=b,c!=d,e in (x,y),f notin (z),g,!h``.

This is the syntax users give to ``-l`` and to the router's ``ROUTE_LABELS`` /
``NAMESPACE_LABELS``. Parsing is strict: a malformed selector is an error, never
silently "match everything".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from shiftnet.api.names import label_value_errors, qualified_name_errors
from shiftnet.errors import InvalidInput

_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s=!(),]+)")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and labels[self.key] in self.values
        # "!=" and "notin" match when the key is absent, as in Kubernetes
        return not has or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        if self.op in ("=", "!="):
            return f"{self.key}{self.op}{self.values[0]}"
        return f"{self.key} {self.op} ({','.join(self.values)})"


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...] = field(default_factory=tuple)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    @classmethod
    def everything(cls) -> Selector:
        return cls(())

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Selector:
        """The equality selector a Service's ``spec.selector`` means."""
        return cls(tuple(Requirement(k, "=", (v,)) for k, v in sorted(labels.items())))


def _check_key(key: str, text: str) -> str:
    reasons = qualified_name_errors(key)
    if reasons:
        raise InvalidInput(f'label selector "{text}": invalid label key "{key}": {reasons[0]}')
    return key


def _check_value(value: str, text: str) -> str:
    reasons = label_value_errors(value)
    if reasons:
        raise InvalidInput(f'label selector "{text}": invalid label value "{value}": {reasons[0]}')
    return value


def parse_selector(text: str | None) -> Selector:
    """Parse a selector string; empty or None selects everything."""
    if text is None or not text.strip():
        return Selector.everything()
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise InvalidInput(f'label selector "{text}": unexpected "{text[pos:]}"')
            break
        tokens.append(m.group(1))
        pos = m.end()
    reqs: list[Requirement] = []
    i = 0

    def need(tok: str) -> None:
        nonlocal i
        if i >= len(tokens) or tokens[i] != tok:
            got = tokens[i] if i < len(tokens) else "end of input"
            raise InvalidInput(f'label selector "{text}": expected "{tok}", got "{got}"')
        i += 1

    while i < len(tokens):
        if tokens[i] == "!":
            i += 1
            if i >= len(tokens):
                raise InvalidInput(f'label selector "{text}": "!" needs a key')
            reqs.append(Requirement(_check_key(tokens[i], text), "!"))
            i += 1
        else:
            key = _check_key(tokens[i], text)
            i += 1
            if i < len(tokens) and tokens[i] in ("=", "==", "!="):
                op = "!=" if tokens[i] == "!=" else "="
                i += 1
                value = ""
                if i < len(tokens) and tokens[i] not in (",", "(", ")", "!", "=", "==", "!="):
                    value = tokens[i]
                    i += 1
                reqs.append(Requirement(key, op, (_check_value(value, text),)))
            elif i < len(tokens) and tokens[i] in ("in", "notin"):
                op = tokens[i]
                i += 1
                need("(")
                values: list[str] = []
                while True:
                    if i < len(tokens) and tokens[i] not in (",", ")", "("):
                        values.append(_check_value(tokens[i], text))
                        i += 1
                    if i < len(tokens) and tokens[i] == ",":
                        i += 1
                        continue
                    break
                need(")")
                if not values:
                    raise InvalidInput(f'label selector "{text}": "{op}" needs at least one value')
                reqs.append(Requirement(key, op, tuple(sorted(set(values)))))
            else:
                reqs.append(Requirement(key, "exists"))
        if i < len(tokens):
            need(",")
            if i >= len(tokens):
                raise InvalidInput(f'label selector "{text}": trailing ","')
    return Selector(tuple(reqs))
