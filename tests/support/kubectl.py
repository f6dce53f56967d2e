"""What a user types at a running ``shiftnet up``: kubectl with the kubeconfig ``up``
wrote, ``shiftnet apply``, and a bounded wait for what the cluster writes back."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tests.support.apiserver import KUBECTL
from tests.support.cli import SHIFTNET

T = TypeVar("T")


def kube_env(env: dict[str, str], home: Path) -> dict[str, str]:
    """``env`` of a ``shiftnet up`` with the kubeconfig it wrote in ``$SHIFTNET_HOME``;
    ``home`` keeps kubectl's discovery cache inside the test."""
    kubeconfig = Path(env["SHIFTNET_HOME"]) / "kubeconfig"
    return dict(env, KUBECONFIG=str(kubeconfig), HOME=str(home))


def kubectl(
    env: dict[str, str], *args: str, input: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real kubectl; its exit status is the caller's to check."""
    return subprocess.run(
        [KUBECTL, *args],
        env=env, input=input, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def kubectl_json(env: dict[str, str], *args: str) -> Any:
    """``kubectl ARGS -o json``, which must succeed, parsed."""
    got = kubectl(env, *args, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def shiftnet_apply(env: dict[str, str], manifest: str) -> None:
    """``shiftnet apply -f -`` with ``manifest`` on stdin, which must succeed."""
    done = subprocess.run(
        [SHIFTNET, "apply", "-f", "-"],
        input=manifest, env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def wait_for(
    probe: Callable[[], T],
    check: Callable[[T], bool],
    timeout: float = 30,
    *,
    interval: float = 0.3,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``probe`` until ``check`` holds on what it returns (an exception in
    ``retry_on`` counts as not yet); fail after ``timeout`` s with the last answer."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = probe()
        except retry_on as err:
            last = err
        else:
            if check(value):
                return value
            last = value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout}s; last: {last!r}")
        time.sleep(interval)
