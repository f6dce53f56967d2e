"""Run in a child process by the contract tests: write objects into a shared store."""

from __future__ import annotations

import asyncio
import sys

from tests.integration.store.objects import RESOURCE, number, renumbered, thing

from shiftnet.store import open_store


async def create_many(url: str, prefix: str, count: int) -> None:
    st = open_store(url)
    for i in range(count):
        await st.create(RESOURCE, thing(f"{prefix}-{i}", n=i))
    await st.close()


async def increment(url: str, count: int) -> None:
    from shiftnet.errors import Conflict

    st = open_store(url)
    done = 0
    while done < count:
        obj = await st.get(RESOURCE, "ns", "counter")
        try:
            await st.update(RESOURCE, renumbered(obj, number(obj) + 1))
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
