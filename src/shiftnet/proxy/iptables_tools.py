"""Which iptables tools to run: the legacy (x_tables) or the nft-based ones.

The two flavours write to different kernel subsystems, and rules of one are
invisible to the other, so the proxy must use the flavour the host's other
software uses. ``auto`` picks it as Kubernetes' iptables-wrapper does: the
flavour whose tables already hold more rules, and when neither holds any,
the flavour the plain ``iptables`` command is.
"""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)

BACKENDS = ("auto", "nft", "legacy")


def tool(backend: str, name: str) -> str:
    """``iptables`` / ``iptables-save`` / ``iptables-restore`` of a resolved backend."""
    suffix = "-legacy" if backend == "legacy" else "-nft"
    return name.replace("iptables", "iptables" + suffix, 1)


async def _output(argv: list[str], netns: str | None) -> str:
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return ""
    out, _ = await proc.communicate()
    return out.decode(errors="replace") if proc.returncode == 0 else ""


async def detect_backend(netns: str | None = None) -> str:
    """``legacy`` or ``nft``: the flavour with more rules in the namespace, else the default."""
    counts = {}
    for backend in ("legacy", "nft"):
        text = await _output([tool(backend, "iptables-save")], netns)
        counts[backend] = sum(1 for line in text.splitlines() if line.startswith("-A "))
    if counts["legacy"] != counts["nft"]:
        chosen = max(counts, key=lambda b: counts[b])
        reason = "more rules"
    else:
        version = await _output(["iptables", "--version"], netns)
        chosen = "legacy" if "legacy" in version else "nft"
        reason = "default iptables"
    log.info(
        "iptables backend chosen=%s reason=%s legacy_rules=%d nft_rules=%d",
        chosen,
        reason.replace(" ", "_"),
        counts["legacy"],
        counts["nft"],
    )
    return chosen
