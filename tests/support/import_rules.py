"""The house's import rules, checked from the source: no cycles, pure modules import no I/O.

Why from the source (``ast``) and not by importing: an import hidden inside a
function only runs when the function does, and a cycle can import fine in
one order and fail in another. Every ``import`` statement counts wherever it
sits, except those under ``if TYPE_CHECKING:`` (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Violation:
    rule: str  # "cycle" or "pure-imports-io"
    detail: str


def module_files(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src``: dotted name -> file."""
    root = src / package.replace(".", "/")
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(path: Path, module: str, modules: Iterable[str] = ()) -> set[str]:
    """The dotted names ``module`` (in ``path``) imports.

    ``from x import y`` counts as ``x.y`` when that is one of ``modules`` (a
    submodule), else as ``x`` and ``x.y`` (a name defined in ``x``).
    """
    known = set(modules)
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                names.add(full)
                if full not in known:
                    names.add(base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def import_graph(src: Path, package: str) -> dict[str, set[str]]:
    """``package``'s modules and, for each, the modules of ``package`` it imports."""
    files = module_files(src, package)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        names = imported_names(path, module, files)
        graph[module] = {n for n in names if n in files and n != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def _blocked(name: str, io_modules: Iterable[str]) -> str | None:
    for io in io_modules:
        if name == io or name.startswith(io + "."):
            return io
    return None


def check(
    src: Path, package: str, pure: Iterable[str], io_modules: Iterable[str]
) -> list[Violation]:
    """The violations in ``package``: cycles, and pure modules reaching an I/O module.

    A pure module may not import an I/O module directly, nor through any
    module of ``package`` it imports (transitively).
    """
    io = sorted(io_modules)
    files = module_files(src, package)
    graph = import_graph(src, package)
    violations = [Violation("cycle", " -> ".join(group)) for group in cycles(graph)]
    direct = {m: imported_names(p, m, files) for m, p in files.items()}
    for module in sorted(pure):
        if module not in files:
            violations.append(Violation("pure-imports-io", f"{module} does not exist"))
            continue
        seen: dict[str, str | None] = {module: None}  # module -> the one that imported it
        queue = [module]
        reported: set[tuple[str, str]] = set()
        while queue:
            current = queue.pop()
            for name in sorted(direct[current]):
                hit = _blocked(name, io)
                if hit is not None:
                    if (current, hit) not in reported:
                        reported.add((current, hit))
                        chain = [current]
                        while (parent := seen[chain[-1]]) is not None:
                            chain.append(parent)
                        path = " -> ".join([*reversed(chain), hit])
                        violations.append(Violation("pure-imports-io", path))
                    continue
                if name in files and name not in seen:
                    seen[name] = current
                    queue.append(name)
    return violations
