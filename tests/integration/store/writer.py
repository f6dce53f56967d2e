"""Run in a child process by the contract tests: write objects into a shared store."""

from __future__ import annotations

import asyncio
import sys

from shiftnet.store import open_store


async def create_many(url: str, prefix: str, count: int) -> None:
    st = open_store(url)
    for i in range(count):
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigThing",
            "metadata": {"name": f"{prefix}-{i}", "namespace": "ns"},
            "spec": {"i": i},
        }
        await st.create("things", obj)
    await st.close()


async def increment(url: str, count: int) -> None:
    from shiftnet.errors import Conflict

    st = open_store(url)
    done = 0
    while done < count:
        obj = await st.get("things", "ns", "counter")
        obj["spec"]["n"] += 1
        try:
            await st.update("things", obj)
        except Conflict:
            continue
        done += 1
    await st.close()


if __name__ == "__main__":
    mode, url, arg1 = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "create":
        asyncio.run(create_many(url, arg1, int(sys.argv[4])))
    else:
        asyncio.run(increment(url, int(arg1)))
