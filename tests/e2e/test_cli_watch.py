"""``shiftnet get -w`` lists, then prints a row per change, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
from pathlib import Path

from tests.support.cli import SHIFTNET, Shiftnet

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "examples" / "seeds"


def test_watch_prints_each_change(tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite://{tmp_path}/state.db", tmp_path / "home")
    sn.ok("apply", "-f", str(SEEDS / "003-mynamespace-test.yaml"))
    proc = subprocess.Popen(
        [SHIFTNET, "--store", sn.store, "get", "routes", "-A", "-w", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=sn.env(),
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.split())

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert lines.get(timeout=30)[:3] == ["EVENT", "NAMESPACE", "NAME"]
        assert lines.get(timeout=30)[:4] == ["ADDED", "mynamespace", "test", "www.example.com"]
        sn.ok("apply", "-f", str(SEEDS / "004-sit-jenkins-passthrough.yaml"))
        assert lines.get(timeout=30)[:3] == ["ADDED", "sit", "sitjenkins.com.cn"]
        sn.ok("delete", "route", "test", "-n", "mynamespace")
        assert lines.get(timeout=30)[:3] == ["DELETED", "mynamespace", "test"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
