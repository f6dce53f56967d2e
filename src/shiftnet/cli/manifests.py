"""Read manifests (files, directories, stdin) into documents that remember where they came from.

Every error names the file, the document (1-based, and its first line) and,
for ``kind: List``, the item, so a user can find the one bad object in a
directory of manifests.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from shiftnet.api.strict_yaml import MAX_NODES, ManifestLoader, expanded_size, load_json
from shiftnet.cli.interrupts import raise_if_interrupted
from shiftnet.errors import InvalidInput, shorten
from shiftnet.sdn.workdir import resolve_workdir_annotation

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
MIB = 1024 * 1024
MAX_OBJECT_BYTES = 3 * MIB  # what one Kubernetes request (so one object) may be


@dataclass(frozen=True)
class Document:
    """One decoded object and where it was read from."""

    data: Any
    file: str
    index: int  # 1-based document number within the file
    line: int  # 1-based line where the document starts
    item: int | None = None  # 0-based index inside a kind: List

    @property
    def where(self) -> str:
        text = f"{self.file}: document {self.index} (line {self.line})"
        if self.item is not None:
            text += f", item {self.item}"
        return text


def manifest_files(path: str, recursive: bool = False) -> list[Path]:
    """The files a ``-f`` argument names: the file itself, or a directory's manifests sorted."""
    p = Path(path)
    if p.is_dir():
        pattern = "**/*" if recursive else "*"
        found = sorted(
            f for f in p.glob(pattern) if f.is_file() and f.suffix.lower() in MANIFEST_SUFFIXES
        )
        return found
    if not p.exists():
        raise InvalidInput(f'the path "{path}" does not exist')
    return [p]


def _too_big(name: str, line: int) -> InvalidInput:
    return InvalidInput(
        f"{name}: the document at line {line} is larger than {MAX_OBJECT_BYTES // MIB} MiB, "
        "the most one object may be"
    )


def split_documents(stream: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """``(first line, bytes)`` of each YAML document, read line by line: a ``---`` line
    starts a new document, as kubectl splits them (directives and comments before
    it stay with it). A document over :data:`MAX_OBJECT_BYTES` is refused as soon
    as it is, before the rest is read."""
    chunk: list[bytes] = []
    size = 0
    start = lineno = 1
    content = False  # the chunk holds more than blank lines, comments and directives
    while line := stream.readline(MAX_OBJECT_BYTES + 1):
        marker = line.startswith(b"---") and line[3:4] in (b"", b" ", b"\t", b"\r", b"\n")
        if marker and content:
            yield start, b"".join(chunk)
            chunk, size, start, content = [], 0, lineno, False
        chunk.append(line)
        stripped = line.strip()
        content = content or (marker or (bool(stripped) and not stripped.startswith((b"#", b"%"))))
        size += len(line)
        if size > MAX_OBJECT_BYTES:
            raise _too_big(name, start)
        if line.endswith(b"\n"):
            lineno += 1
    if chunk:
        yield start, b"".join(chunk)


def _decode(raw: bytes, name: str, base: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInput(
            f"{name}: not UTF-8 text ({err.reason} at byte {base + err.start})"
        ) from None


def _yaml_documents(text: str, name: str, first_line: int, counter: list[int]) -> list[Document]:
    """The documents of one chunk; ``counter`` numbers documents across the file."""
    docs: list[Document] = []
    loader = ManifestLoader(text, line_offset=first_line - 1)
    try:
        while loader.check_node():
            node = loader.get_node()
            counter[0] += 1
            if node is None:
                continue
            line = node.start_mark.line + first_line
            data = loader.construct_document(node)
            if data is None:
                continue  # an empty document between "---" lines
            if expanded_size(data) > MAX_NODES:
                raise InvalidInput(
                    f"{name}: document {counter[0]} (line {line}): its aliases expand to more "
                    f"than {MAX_NODES:,} values"
                )
            docs.extend(_expand(Document(data, name, counter[0], line)))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + first_line}, column {mark.column + 1}: " if mark else ""
        problem = err.problem or err.context or "malformed YAML"
        raise InvalidInput(f"{name}: {where}invalid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise InvalidInput(f"{name}: invalid YAML: {shorten(str(err))}") from None
    except RecursionError:  # a guard: composition is bounded, this should not happen
        raise InvalidInput(f"{name}: invalid YAML: nesting too deep") from None
    finally:
        loader.dispose()
    return docs


def parse_stream(stream: BinaryIO, name: str, as_json: bool = False) -> list[Document]:
    """Every document of one file or stdin, each refused past :data:`MAX_OBJECT_BYTES`."""
    if as_json:
        raw = stream.read(MAX_OBJECT_BYTES + 1)
        if len(raw) > MAX_OBJECT_BYTES:
            raise _too_big(name, 1)
        return _expand(Document(load_json(_decode(raw, name, 0), name), name, 1, 1))
    docs: list[Document] = []
    counter = [0]
    offset = 0
    for first_line, raw in split_documents(stream, name):
        docs.extend(_yaml_documents(_decode(raw, name, offset), name, first_line, counter))
        offset += len(raw)
    return docs


def parse_text(text: str, name: str, as_json: bool = False) -> list[Document]:
    """Split one file's text into documents (YAML multi-doc, or one JSON value)."""
    return parse_stream(io.BytesIO(text.encode("utf-8")), name, as_json)


def _expand(doc: Document) -> list[Document]:
    """``kind: List`` (what ``get -o yaml`` prints) becomes its items."""
    data = doc.data
    if isinstance(data, dict) and data.get("kind") == "List" and "items" in data:
        items = data.get("items") or []
        if not isinstance(items, list):
            raise InvalidInput(f"{doc.where}: List.items must be a list")
        return [Document(it, doc.file, doc.index, doc.line, i) for i, it in enumerate(items)]
    return [doc]


def read_manifests(
    paths: Iterable[str], recursive: bool = False, stdin: Any = None
) -> list[Document]:
    """Every document of every ``-f`` argument, in order (``-`` reads standard input)."""
    docs: list[Document] = []
    for arg in paths:
        if arg == "-":
            raise_if_interrupted()  # a Ctrl-C before this point must not leave us reading
            stream = _binary(stdin or sys.stdin)
            head = stream.peek(64) if isinstance(stream, io.BufferedReader) else b""
            stdin_docs = parse_stream(stream, "<stdin>", as_json=head.lstrip().startswith(b"{"))
            for doc in stdin_docs:
                resolve_workdir_annotation(doc.data, Path.cwd())
            docs.extend(stdin_docs)
            continue
        files = manifest_files(arg, recursive)
        if not files:
            raise InvalidInput(f'no manifests (*.yaml, *.yml, *.json) found in "{arg}"')
        for f in files:
            try:
                with open(f, "rb") as stream:
                    file_docs = parse_stream(stream, str(f), as_json=f.suffix.lower() == ".json")
            except OSError as err:
                raise InvalidInput(f"{f}: cannot read: {err.strerror or err}") from None
            for doc in file_docs:  # pods' "shiftnet.io/workdir: ." means this file's directory
                resolve_workdir_annotation(doc.data, f.parent)
            docs.extend(file_docs)
    return docs


def _binary(stream: Any) -> io.BufferedReader | io.BytesIO:
    """stdin as bytes: its buffer, or a text stream (tests pass ``io.StringIO``) encoded."""
    buffer = getattr(stream, "buffer", None)
    if isinstance(buffer, io.BufferedReader):
        return buffer
    return io.BytesIO(stream.read().encode("utf-8"))
