"""One check's verdict and a whole report, as lines for a terminal or as JSON.

Pure: no I/O. Every check says what it found; a failed one also says the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PASS_MARK = "✓"
FAIL_MARK = "✗"


@dataclass(frozen=True)
class Check:
    """``name``: what must hold; ``found``: the fact seen; ``fix``: what to do (failures only)."""

    name: str
    ok: bool
    found: str
    fix: str = ""


@dataclass(frozen=True)
class Report:
    subject: str  # "route demo/hello (http://hello.demo.example.com:8080/)"
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def first_failure(self) -> Check | None:
        return next((c for c in self.checks if not c.ok), None)

    def lines(self) -> list[str]:
        out = [f"diagnose {self.subject}"]
        for number, check in enumerate(self.checks, 1):
            mark = PASS_MARK if check.ok else FAIL_MARK
            line = f"{mark} {number}. {check.name}: {check.found}"
            if not check.ok and check.fix:
                line += f" -- fix: {check.fix}"
            out.append(line)
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "ok": self.ok,
            "checks": [
                {"number": n, "name": c.name, "ok": c.ok, "found": c.found, "fix": c.fix}
                for n, c in enumerate(self.checks, 1)
            ],
        }
