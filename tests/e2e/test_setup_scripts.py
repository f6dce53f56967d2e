"""The README's two commands, the scripts behind them and CI agree, and the main job's
manifests are valid."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from shiftnet.cli.manifests import read_manifests
from shiftnet.cli.objects import decode_documents

ROOT = Path(__file__).resolve().parents[2]


def test_readme_commands_exist_and_ci_runs_the_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    for script in ("setup-and-run", "setup-and-test"):
        assert f"./scripts/{script}" in readme
        path = ROOT / "scripts" / script
        assert os.access(path, os.X_OK), path
        assert '"$ROOT/scripts/install.sh"' in path.read_text()
    ci = ROOT / ".ci" / "run"
    assert os.access(ci, os.X_OK)
    assert re.search(r"^exec \./scripts/setup-and-test$", ci.read_text(), re.M)
    for script in ("install.sh", "setup-and-run", "setup-and-test"):
        subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)], check=True)
    subprocess.run(["bash", "-n", str(ci)], check=True)


def test_main_job_manifests_are_valid() -> None:
    run = (ROOT / "scripts" / "setup-and-run").read_text()
    m = re.search(r"shiftnet\" up -f (\S+)", run)
    assert m, run
    docs = read_manifests([str(ROOT / m.group(1))])
    objects = decode_documents(docs, None)  # parse + validate, as `shiftnet up` does first
    kinds = {o.KIND for o in objects}
    assert {"Namespace", "Pod", "Service", "Route"} <= kinds


def test_seed_examples_are_valid() -> None:
    objects = decode_documents(read_manifests([str(ROOT / "examples" / "seeds")]), None)
    routes = sorted(f"{o.namespace}/{o.name}" for o in objects if o.KIND == "Route")
    assert routes == ["mynamespace/test", "sit/sitjenkins.com.cn"]


def test_python_packages_install_from_the_lock() -> None:
    """Every set-up installs pinned versions: pip runs with constraints.txt, and the
    lock pins each requirement of pyproject.toml (so a fresh machine gets what CI tested)."""
    import tomllib

    install = (ROOT / "scripts" / "install.sh").read_text()
    assert '-c "$ROOT/constraints.txt"' in install
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    for requirement in wanted:
        name = re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0]
        assert re.sub(r"[-_.]+", "-", name).lower() in pins, f"{name} is not in constraints.txt"
