"""Manifest decoding limits, pure: splitting, duplicate keys, nesting, aliases, 3 MiB."""

from __future__ import annotations

import io

import pytest

from shiftnet.api.strict_yaml import MAX_NESTING, expanded_size, nesting
from shiftnet.cli.manifests import MAX_OBJECT_BYTES, parse_text, split_documents
from shiftnet.errors import InvalidInput


def test_documents_split_at_marker_lines_keep_their_numbers_and_lines() -> None:
    text = "%YAML 1.1\n# lead\n---\na: 1\n---\n---\nb: 2\nc: |\n  ---x\n"
    docs = parse_text(text, "x.yaml")
    assert [(d.index, d.line, d.data) for d in docs] == [
        (1, 4, {"a": 1}),
        (3, 7, {"b": 2, "c": "---x\n"}),
    ]


def test_split_refuses_a_big_document_before_reading_the_rest() -> None:
    class Endless(io.RawIOBase):
        """50 MiB of one document, counted as it is read."""

        read_bytes = 0

        def readable(self) -> bool:
            return True

        def readinto(self, b: bytearray) -> int:  # type: ignore[override]
            if self.read_bytes > 50 * MAX_OBJECT_BYTES:
                return 0
            n = len(b)
            b[:n] = b"k: " + b"v" * (n - 4) + b"\n" if n > 4 else b"\n" * n
            self.read_bytes += n
            return n

    raw = Endless()
    with pytest.raises(InvalidInput, match="larger than 3 MiB"):
        list(split_documents(io.BufferedReader(raw), "big.yaml"))
    assert raw.read_bytes < 2 * MAX_OBJECT_BYTES


def test_duplicate_keys_name_both_lines_and_merges_are_not_duplicates() -> None:
    with pytest.raises(
        InvalidInput, match=r'line 3, column 1: .*mapping key "a" already defined at line 1'
    ):
        parse_text("a: 1\nb: 2\na: 3\n", "x.yaml")
    with pytest.raises(InvalidInput, match=r'line 7, .*"a" already defined at line 6'):
        parse_text("x: 1\n---\ny: 1\n---\nz:\n  a: 1\n  a: 2\n", "x.yaml")
    [doc] = parse_text("base: &b {a: 1, c: 3}\nm: {<<: *b, a: 2}\n", "x.yaml")
    assert doc.data["m"] == {"a": 2, "c": 3}
    with pytest.raises(InvalidInput, match='mapping key "k" already defined'):
        parse_text('{"k": 1, "k": 2}', "x.json", as_json=True)


def test_nesting_is_bounded_in_yaml_and_json() -> None:
    ok = "a: " + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "\n"
    assert nesting(parse_text(ok, "x.yaml")[0].data) == MAX_NESTING
    for text, as_json in (
        ("a: " + "[" * MAX_NESTING + "]" * MAX_NESTING, False),
        ("[" * 50_000 + "]" * 50_000, True),
    ):
        with pytest.raises(InvalidInput, match=f"nesting deeper than {MAX_NESTING} levels"):
            parse_text(text, "x", as_json=as_json)


def test_aliases_are_counted_expanded() -> None:
    shared = ["x"] * 10
    assert (
        expanded_size({"a": [shared] * 10}) == 1 + 1 + 1 + 10 * 11
    )  # the dict, its key, the list, ten lists of ten
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    with pytest.raises(InvalidInput, match="aliases expand to more than"):
        parse_text("\n".join(rows), "bomb.yaml")
