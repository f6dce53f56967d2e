"""Read manifests (files, directories, stdin) into documents that remember where they came from.

Every error names the file, the document (1-based, and its first line) and,
for ``kind: List``, the item, so a user can find the one bad object in a
directory of manifests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from shiftnet.errors import InvalidInput
from shiftnet.sdn.workdir import resolve_workdir_annotation

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


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


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInput(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise InvalidInput(f"{path}: cannot read: {err.strerror or err}") from None


def parse_text(text: str, name: str, as_json: bool = False) -> list[Document]:
    """Split one file's text into documents (YAML multi-doc, or one JSON value)."""
    if as_json:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InvalidInput(
                f"{name}: line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}"
            ) from None
        return _expand(Document(data, name, 1, 1))
    docs: list[Document] = []
    loader = yaml.SafeLoader(text)
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if node is None:
                continue
            data = loader.construct_document(node)
            if data is None:
                continue  # an empty document between "---" lines
            docs.extend(_expand(Document(data, name, index, node.start_mark.line + 1)))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = err.problem or err.context or "malformed YAML"
        raise InvalidInput(f"{name}: {where}invalid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise InvalidInput(f"{name}: invalid YAML: {err}") from None
    finally:
        loader.dispose()
    return docs


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
            text = (stdin or sys.stdin).read()
            stdin_docs = parse_text(text, "<stdin>", as_json=text.lstrip().startswith("{"))
            for doc in stdin_docs:
                resolve_workdir_annotation(doc.data, Path.cwd())
            docs.extend(stdin_docs)
            continue
        files = manifest_files(arg, recursive)
        if not files:
            raise InvalidInput(f'no manifests (*.yaml, *.yml, *.json) found in "{arg}"')
        for f in files:
            file_docs = parse_text(_read_text(f), str(f), as_json=f.suffix.lower() == ".json")
            for doc in file_docs:  # pods' "shiftnet.io/workdir: ." means this file's directory
                resolve_workdir_annotation(doc.data, f.parent)
            docs.extend(file_docs)
    return docs
