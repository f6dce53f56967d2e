"""Reading manifests: documents know their file, number and line; errors name them."""

from __future__ import annotations

import pytest

from shiftnet.cli.manifests import parse_text
from shiftnet.errors import InvalidInput

TEXT = """\
# leading comment
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: b}}
- {apiVersion: v1, kind: Namespace, metadata: {name: c}}
"""


def test_documents_remember_where_they_start() -> None:
    docs = parse_text(TEXT, "x.yaml")
    assert [(d.index, d.line, d.item) for d in docs] == [(1, 2, None), (3, 7, 0), (3, 7, 1)]
    assert [d.data["metadata"]["name"] for d in docs] == ["a", "b", "c"]
    assert docs[2].where == "x.yaml: document 3 (line 7), item 1"


def test_yaml_error_names_line_and_column() -> None:
    with pytest.raises(
        InvalidInput, match=r"^x.yaml: line 4, column 1: invalid YAML: expected the node content"
    ):
        parse_text("a: 1\nb:\n  - c: [\n", "x.yaml")


def test_json_error_names_line_and_column() -> None:
    with pytest.raises(InvalidInput, match=r"^x.json: line 2, column 2: invalid JSON: Extra data"):
        parse_text('{"a": 1\n}x', "x.json", as_json=True)
