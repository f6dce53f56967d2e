"""Hostile manifests and a stalled store through the real ``shiftnet`` command.

Kubernetes' limits are the anchor: one object is at most 3 MiB, so a bigger
document is refused before the rest of the file is read; deep nesting, alias
bombs and duplicate keys are one sentence each (no traceback), in bounded time
and memory; no error line repeats a huge value whole; an etcd that does not
answer is named with what timed out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET, Shiftnet, one_error_line
from tests.support.etcd import running_etcd

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

MIB = 1024 * 1024
LONGEST_LINE = 800  # "a few hundred characters": file, object, field, a cut value, the reason
SERVICE_HEAD = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"


@pytest.fixture
def sn(tmp_path: Path) -> Shiftnet:
    return Shiftnet(f"sqlite://{tmp_path}/state.db", tmp_path / "home")


def refused(sn: Shiftnet, *args: str, input: str | None = None, timeout: float = 60) -> str:
    """A command that must fail in time without writing; its one error sentence."""
    before = sn.revision()
    res = sn.run(*args, input=input, timeout=timeout)
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr[-2000:])
    assert res.stdout == ""
    assert sn.revision() == before
    line = one_error_line(res.stderr)
    assert len(line) <= LONGEST_LINE, f"{len(line)} characters: {line[:300]}..."
    return line


def peak_rss_mib(sn: Shiftnet, *args: str, stdin_path: Path | None = None) -> tuple[int, str]:
    """Run shiftnet under a fresh parent that reports its children's peak RSS (MiB)."""
    probe = (
        "import resource, subprocess, sys\n"
        "stdin = open(sys.argv[1], 'rb') if sys.argv[1] else subprocess.DEVNULL\n"
        "res = subprocess.run(sys.argv[2:], stdin=stdin, capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        "print(res.returncode)\n"
        "print(res.stderr, end='')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(stdin_path or ""), SHIFTNET, "--store", sn.store, *args],
        capture_output=True,
        text=True,
        env=sn.env(),
        timeout=60,
        check=True,
    ).stdout
    rss, code, stderr = out.split("\n", 2)
    assert int(code) == 1, stderr
    return int(rss), one_error_line(stderr)


def test_a_document_over_3_mib_is_refused_before_it_is_read(sn: Shiftnet, tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("w") as f:  # 50 MiB: one Service with a giant annotation
        f.write(SERVICE_HEAD + '  annotations:\n    a: "')
        for _ in range(50):
            f.write("x" * MIB)
        f.write('"\nspec:\n  ports: [{port: 80}]\n')
    line = refused(sn, "apply", "-f", str(big), timeout=30)
    assert str(big) in line and "3 MiB" in line, line
    rss, line = peak_rss_mib(sn, "apply", "-f", str(big))
    assert rss < 200, f"refusing a 50 MiB file took {rss} MiB"
    # The same through stdin, and one JSON value.
    rss, line = peak_rss_mib(sn, "apply", "-f", "-", stdin_path=big)
    assert "<stdin>" in line and "3 MiB" in line and rss < 200, (rss, line)
    as_json = tmp_path / "big.json"
    as_json.write_text(json.dumps({"apiVersion": "v1", "kind": "Service", "x": "y" * (4 * MIB)}))
    assert "3 MiB" in refused(sn, "apply", "-f", str(as_json), timeout=30)


def test_documents_under_the_limit_still_apply_one_by_one(sn: Shiftnet, tmp_path: Path) -> None:
    many = tmp_path / "many.yaml"
    docs = []
    for i in range(3):  # together over 3 MiB, each well under it
        docs.append(
            f"apiVersion: v1\nkind: Service\nmetadata:\n  name: web-{i}\n  annotations:\n"
            + "".join(f"    k{j}: {'v' * 1000}\n" for j in range(200))
            + "spec:\n  ports: [{port: 80}]\n"
        )
    many.write_text("---\n".join(docs * 6))  # the same three objects, six times over
    assert many.stat().st_size > 3 * MIB
    out = sn.ok("apply", "-f", str(many))
    assert out.count("service/web-0") == 6, out


def test_deep_nesting_is_one_sentence(sn: Shiftnet, tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(SERVICE_HEAD + "spec:\n  selector: {a: " + "[" * 5000 + "]" * 5000 + "}\n")
    assert "nesting deeper than" in refused(sn, "apply", "-f", str(flow))
    block = tmp_path / "block.yaml"
    block.write_text(
        SERVICE_HEAD
        + "spec:\n"
        + "".join("  " * (i + 1) + "a:\n" for i in range(1200))
        + "  " * 1202
        + "b\n"
    )
    assert "nesting deeper than" in refused(sn, "apply", "-f", str(block))
    deep_json = tmp_path / "deep.json"
    deep_json.write_text(
        '{"apiVersion": "v1", "kind": "Service", "spec": ' + "[" * 100000 + "]" * 100000 + "}"
    )
    assert "nesting deeper than" in refused(sn, "apply", "-f", str(deep_json))


def test_an_alias_bomb_is_refused(sn: Shiftnet, tmp_path: Path) -> None:
    rows = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(SERVICE_HEAD + "\n".join(rows) + "\n")  # 9**9 values once expanded
    assert "aliases expand to more than" in refused(sn, "apply", "-f", str(bomb), timeout=30)


def test_duplicate_keys_are_refused_as_kubectl_does(sn: Shiftnet, tmp_path: Path) -> None:
    dup = tmp_path / "dup.yaml"
    dup.write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\nspec:\n"
        "  ports: [{port: 80}]\n"
    )
    line = refused(sn, "apply", "-f", str(dup))
    assert line == (
        f'error: {dup}: line 5, column 3: invalid YAML: mapping key "name" already defined '
        "at line 4"
    ), line
    later = tmp_path / "later.yaml"  # in a second document: lines count from the file's start
    later.write_text(SERVICE_HEAD + "spec:\n  ports: [{port: 80}]\n---\n" + dup.read_text())
    assert "line 12, column 3" in refused(sn, "apply", "-f", str(later))
    dup_json = tmp_path / "dup.json"
    dup_json.write_text('{"apiVersion": "v1", "kind": "Service", "kind": "Pod"}')
    assert 'mapping key "kind" already defined' in refused(sn, "apply", "-f", str(dup_json))
    # YAML merge keys may be overridden: that is not a duplicate.
    merged = tmp_path / "merged.yaml"
    merged.write_text(
        "base: &base {port: 80, name: http}\napiVersion: v1\nkind: Service\n"
        "metadata: {name: merged}\nspec:\n  ports: [{<<: *base, name: web}]\n"
    )
    res = sn.run("apply", "-f", str(merged))
    assert "already defined" not in res.stderr, res.stderr


@pytest.mark.parametrize(
    "where",
    ["value", "name", "field", "kind"],
)
def test_a_100_kb_value_is_not_echoed_whole(sn: Shiftnet, tmp_path: Path, where: str) -> None:
    long = "a" * 100_000
    obj: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]},
    }
    if where == "value":
        obj["spec"] = {"clusterIP": long, "ports": [{"port": 80}]}
    elif where == "name":
        obj["metadata"] = {"name": long}
    elif where == "field":
        obj["spec"] = {long: 1, "ports": [{"port": 80}]}
    else:
        obj["kind"] = long
    path = tmp_path / "long.json"
    path.write_text(json.dumps(obj))
    line = refused(sn, "apply", "-f", str(path))
    assert "more characters" in line, line


def test_an_etcd_that_does_not_answer_is_named_with_the_timeout(tmp_path: Path) -> None:
    with running_etcd() as etcd:
        assert etcd.proc is not None
        os.kill(etcd.proc.pid, signal.SIGSTOP)  # accepts connections, answers nothing
        try:
            url = f"{etcd.url}?timeout=0.5"  # the URL's option, not the 10 s default
            res = Shiftnet(url, tmp_path / "home").run("get", "pods", timeout=60)
        finally:
            os.kill(etcd.proc.pid, signal.SIGCONT)
    assert res.returncode == 1
    line = one_error_line(res.stderr)
    assert f"http://127.0.0.1:{etcd.client_port} (" in line, line
    assert "timed out after 0.5 s" in line, line


@pytest.mark.parametrize("option", ["timeout=soon", "timeout=0", "timeout=inf", "retries=3"])
def test_a_bad_etcd_url_option_is_named(tmp_path: Path, option: str) -> None:
    res = Shiftnet(f"etcd://127.0.0.1:1?{option}", tmp_path / "home").run("get", "pods")
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr[-2000:])
    assert res.stdout == ""
    line = one_error_line(res.stderr)
    assert "?timeout=SECONDS" in line or "option timeout must be a positive number" in line, line
    assert "cannot reach etcd" not in line, line  # refused before any request
