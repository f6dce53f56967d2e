"""Every coalescing runner a router owns has a ``max_interval``.

Why: a runner without one runs only when kicked, so a failed ``haproxy -c``,
reload, sync or status write would wait for an unrelated event to be tried
again. The router is only constructed here (no HAProxy, no informer started);
its object graph is walked, so a runner added later anywhere under it is
checked too.
"""

from __future__ import annotations

from pathlib import Path

from shiftnet.router.config import RouterConfig
from shiftnet.router.router import Router
from shiftnet.runner import CoalescingRunner
from shiftnet.store import open_store


def _runners(root: object) -> list[CoalescingRunner]:
    """The runners reachable from ``root`` through shiftnet objects and plain containers."""
    found: list[CoalescingRunner] = []
    seen: set[int] = set()
    todo: list[object] = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, CoalescingRunner):
            found.append(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            todo.extend(obj)
        elif type(obj).__module__.startswith("shiftnet.") and hasattr(obj, "__dict__"):
            todo.extend(vars(obj).values())
    return found


async def test_every_runner_of_a_router_retries_on_its_own(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    try:
        config = RouterConfig(http_port=18080, https_port=18443, work_dir=str(tmp_path / "r"))
        router = Router(store, config)
        runners = _runners(router)
        names = sorted(r.name for r in runners)
        assert {"router-sync", "router-endpoints", "router-status", "haproxy-reload"} <= set(
            names
        ), names
        unbounded = [r.name for r in runners if r.max_interval is None]
        assert unbounded == []
        assert all(r.max_interval >= r.min_interval for r in runners)  # type: ignore[operator]
    finally:
        await store.close()
