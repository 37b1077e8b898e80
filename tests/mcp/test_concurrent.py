"""Four agents on one workspace while a CLI process appends: nothing lost, nothing stale."""

from __future__ import annotations

import asyncio
import sys

from tests.mcp.conftest import call, connect, server_env

CLIENTS = 4
ROUNDS = 3


def marker(who: str, n: int) -> str:
    """A word found in one entry only ("clientbxc"); letters, so no tokenizer splits it."""
    return who + "x" + "".join(chr(ord("a") + int(d)) for d in str(n))


async def test_four_clients_and_a_cli_lose_nothing_and_never_serve_stale(memories, today):
    sessions: list = []
    connected, finished = asyncio.Event(), asyncio.Event()

    async def agent() -> None:  # a session is entered and left in one task (anyio's rule)
        async with connect(memories) as session:
            sessions.append(session)
            if len(sessions) == CLIENTS:
                connected.set()
            await finished.wait()

    agents = [asyncio.ensure_future(agent()) for _ in range(CLIENTS)]  # started at once
    waiting = asyncio.ensure_future(connected.wait())
    await asyncio.wait([waiting, *agents], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    try:
        assert connected.is_set(), [agent.exception() for agent in agents if agent.done()]

        async def everyone_finds(word: str) -> None:
            found = await asyncio.gather(*(call(s, "search_memory", query=word, mode="bm25")
                                           for s in sessions))  # words: the same with the model
            for answer in found:  # each server sees the write that just returned
                matched = [hit for hit in answer["results"] if hit["matched"]]  # not neighbours
                assert [hit["content"].split()[-1] for hit in matched] == [word]

        async def client(number: int) -> None:
            for n in range(ROUNDS):
                word = marker(f"client{chr(ord('a') + number)}", n)
                kind = "long_term" if n % 2 else "daily"
                await call(sessions[number], "add_memory", content=f"Agent note {word}", kind=kind)
                await everyone_finds(word)

        async def cli() -> None:
            for n in range(ROUNDS):
                word = marker("cli", n)
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "miniclaw", "--workspace", str(memories), "memory",
                    "add", f"Typed in a terminal {word}", env=server_env())
                assert await proc.wait() == 0
                await everyone_finds(word)

        await asyncio.gather(cli(), *(client(n) for n in range(CLIENTS)))
        totals = await asyncio.gather(*(call(s, "memory_status") for s in sessions))
    finally:
        finished.set()
        await asyncio.gather(*agents)

    words = [marker("cli", n) for n in range(ROUNDS)] + [
        marker(f"client{chr(ord('a') + c)}", n) for c in range(CLIENTS) for n in range(ROUNDS)]
    text = ((memories / "memory/MEMORY.md").read_text()
            + (memories / f"memory/{today}.md").read_text())
    assert all(text.count(word) == 1 for word in words)  # each written once, none lost
    assert {t["entries"] for t in totals} == {4 + len(words)}  # and every index holds them all
