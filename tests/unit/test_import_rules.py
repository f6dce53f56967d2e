"""Imports flow one way: no cycles in ``shiftnet``, and no pure module reaches an I/O module.

The rules are checked from the source (``tests/support/import_rules.py``);
the planted-violation test shows the check fails when a rule is broken.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.support.import_rules import Violation, check

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

# The router's pure modules: no I/O, no clocks (docs/architecture.md, docs/router.md).
ROUTER_PURE = [
    "shiftnet.router.access_routes",
    "shiftnet.router.admission",
    "shiftnet.router.admission_index",
    "shiftnet.router.annotations",
    "shiftnet.router.config",
    "shiftnet.router.durations",
    "shiftnet.router.external_certs",
    "shiftnet.router.haproxy_stats",
    "shiftnet.router.model",
    "shiftnet.router.model_index",
    "shiftnet.router.haproxy.assembly",
    "shiftnet.router.haproxy.build",
    "shiftnet.router.haproxy.commands",
    "shiftnet.router.haproxy.description",
    "shiftnet.router.haproxy.escape",
    "shiftnet.router.haproxy.isolation",
    "shiftnet.router.haproxy.limits",
    "shiftnet.router.haproxy.live",
    "shiftnet.router.haproxy.live_certs",
    "shiftnet.router.haproxy.log_format",
    "shiftnet.router.haproxy.names",
    "shiftnet.router.haproxy.render",
    "shiftnet.router.haproxy.writer",
    "shiftnet.events.folding",  # not the router's, but pure by the same rule
]
# What does I/O: sockets, processes, files, the store, metrics.
IO_MODULES = [
    "asyncio",
    "socket",
    "subprocess",
    "shutil",
    "prometheus_client",
    "httpx",
    "aiohttp",
    "shiftnet.client",
    "shiftnet.informer",
    "shiftnet.store",
    "shiftnet.router.metrics",
    "shiftnet.router.router",
    "shiftnet.router.refusals",
    "shiftnet.router.haproxy.driver",
    "shiftnet.router.haproxy.files",
    "shiftnet.router.haproxy.process",
    "shiftnet.router.haproxy.runtime",
]


def test_shiftnet_has_no_import_cycle_and_pure_router_modules_do_no_io() -> None:
    assert check(SRC, "shiftnet", ROUTER_PURE, IO_MODULES) == []


def test_every_pure_router_module_is_type_checked_strictly() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    checked = {Path(p) for p in config["files"]}
    for module in ROUTER_PURE:
        path = Path("src", *module.split(".")).with_suffix(".py")
        assert path in checked or any(d in path.parents for d in checked), module


def _router_column(cell: str) -> set[Path]:
    """The files one cell of the router's row names; after `haproxy/` they are that package's."""
    out: set[Path] = set()
    package = Path("src/shiftnet/router")
    for name in re.findall(r"`([\w/.]+)`", cell):
        if name == "haproxy/":
            package = Path("src/shiftnet/router/haproxy")
        elif name.startswith("haproxy/"):
            package = Path("src/shiftnet/router/haproxy")
            out.add(Path("src/shiftnet/router", name))
        elif name.endswith(".py"):
            out.add(package / name)
    return out


def test_the_router_row_of_docs_architecture_agrees_with_the_pure_list_and_mypy() -> None:
    table = (ROOT / "docs" / "architecture.md").read_text()
    (row,) = [line for line in table.splitlines() if line.startswith("| `router/` |")]
    pure_cell, driver_cell = row.split(" | ")[1:3]
    documented = _router_column(pure_cell)
    listed = {
        Path("src", *m.split(".")).with_suffix(".py")
        for m in ROUTER_PURE
        if m.startswith("shiftnet.router.")
    }
    assert documented == listed
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = {Path(p) for p in config["files"] if p.startswith("src/shiftnet/router")}
    assert documented <= strict, documented - strict
    # Router modules checked strictly beyond the pure ones do I/O: the driver column names them.
    assert strict - documented <= _router_column(driver_cell), strict - documented


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_planted_cycle_and_a_pure_module_reaching_io_fail_the_check(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "fake/__init__.py": "",
            "fake/pure.py": "from fake import helper\n",
            # Hidden in a function, and two modules away from the pure one.
            "fake/helper.py": "def later():\n    from fake.io import send\n    return send\n",
            "fake/io.py": "import socket\n\ndef send():\n    return socket\n",
            "fake/typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import fake.io\n"
            ),
            "fake/a.py": "from . import b\n",
            "fake/b.py": "import fake.a\n",
        },
    )
    found = check(tmp_path, "fake", ["fake.pure", "fake.typed"], ["fake.io", "socket"])
    assert found == [
        Violation("cycle", "fake.a -> fake.b"),
        Violation("pure-imports-io", "fake.pure -> fake.helper -> fake.io"),
    ]
    # The same tree without the planted violations passes.
    _write(tmp_path, {"fake/b.py": "", "fake/helper.py": "def later():\n    return None\n"})
    assert check(tmp_path, "fake", ["fake.pure", "fake.typed"], ["fake.io", "socket"]) == []
