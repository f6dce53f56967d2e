"""The CLI is the top room: nothing under ``src/shiftnet`` but ``cli/`` imports it.

Logic a library user needs (apply's merge, the checks of a write) lives
below the CLI, so the API server and Python callers get it without the
command line; this reads every module's imports with ``ast`` to keep it so.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import shiftnet

ROOT = Path(next(iter(shiftnet.__path__)))  # a namespace package: no __init__.py
# The entry points (the ``shiftnet`` console script, ``python -m shiftnet``) are the
# only places above the CLI.
ENTRIES = {ROOT / "entry_point.py", ROOT / "__main__.py"}


def imported_names(source: str, package: str) -> list[str]:
    """Every absolute module name ``source`` (a module of ``package``) imports,
    relative imports resolved, ``from X import y`` counted as ``X`` and ``X.y``."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            names.append(module)
            names.extend(f"{module}.{alias.name}" for alias in node.names)
    return names


def is_cli(name: str) -> bool:
    return name == "shiftnet.cli" or name.startswith("shiftnet.cli.")


def test_no_module_below_the_cli_imports_it() -> None:
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if path in ENTRIES or rel.parts[0] == "cli":
            continue
        package = ".".join(("shiftnet", *rel.parent.parts))
        found = imported_names(path.read_text(), package)
        offenders += [f"{rel}: {name}" for name in found if is_cli(name)]
    assert offenders == []


@pytest.mark.parametrize(
    ("source", "reaches_cli"),
    [
        ("import shiftnet.cli.applying", True),
        ("from shiftnet.cli.applying import x", True),
        ("from shiftnet import cli", True),
        ("from ..cli import applying", True),
        ("from .. import cli", True),
        ("from ..api import apply_merge", False),
        ("from . import verbs", False),
        ("import shiftnet.client", False),
    ],
)
def test_every_spelling_of_an_import_is_read(source: str, reaches_cli: bool) -> None:
    names = imported_names(source, "shiftnet.apiserver")
    assert any(is_cli(n) for n in names) is reaches_cli, names
