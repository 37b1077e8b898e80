"""The add door (issue 36): the same fact added twice, by any path, is written once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from miniclaw.memory import Added, MemoryStore
from tests.conftest import NOW, write

TODAY = NOW.date().isoformat()
NOTE = f"memory/{TODAY}.md"


def read(workspace: Path, rel: str) -> str:
    path = workspace / rel
    return path.read_text() if path.exists() else ""


async def test_the_same_fact_in_another_spelling_is_not_written_again(store, workspace):
    first = await store.add("Sam prefers tea over coffee.", long=True)
    again = await store.add("- **sam** PREFERS tea over `coffee`", long=True)
    assert first.written and not again.written
    assert again.entry == again.duplicate_of == first.entry
    assert read(workspace, "memory/MEMORY.md").count("prefers tea") == 1


async def test_a_near_copy_is_caught_and_force_writes_it_anyway(store, workspace):
    await store.add("The Atlas project deadline moved to the end of March", long=True)
    typo = await store.add("The Atlas project deadlin moved to the end of March", long=True)
    assert not typo.written
    forced = await store.add("The Atlas project deadlin moved to the end of March", long=True,
                             force=True)
    assert forced.written and forced.entry.line_start != typo.entry.line_start
    assert read(workspace, "memory/MEMORY.md").count("Atlas project") == 2


async def test_an_update_is_not_a_duplicate(store, workspace):
    await store.add("The Atlas budget for this year is 5,000 euros", long=True)
    changed = await store.add("The Atlas budget for this year is 6,000 euros", long=True)
    assert changed.written


async def test_the_api_methods_return_the_entry_holding_the_fact(store, workspace):
    entry = await store.add_long_term("Allergic to penicillin", category="health")
    again = await store.add_long_term("allergic to penicillin!")
    assert again == entry
    forced = await store.add_long_term("allergic to penicillin!", force=True)
    assert forced != entry and forced.text == "allergic to penicillin!"


async def test_a_daily_note_add_looks_in_today_and_in_memory_md(store, workspace):
    long = await store.add("Dana is my manager", long=True)
    noted = await store.add("dana is my manager.")
    assert not noted.written and noted.duplicate_of == long.entry
    first = await store.add("Met Sam about the kayak trip")
    second = await store.add("Met Sam about the kayak trip")
    assert first.written and not second.written and second.entry == first.entry
    assert not (workspace / NOTE).read_text().count("Dana")
    # a fact of a note may be promoted to long-term memory: not a duplicate there
    assert (await store.add("Met Sam about the kayak trip", long=True)).written


async def test_an_earlier_days_note_is_a_log_not_a_store_of_facts(workspace):
    write(workspace, "memory/2026-02-13.md",
          "# Daily Note - 2026-02-13\n\n## 09:00:00 UTC\n\nStand-up with the Atlas team\n")
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        assert (await store.add("Stand-up with the Atlas team")).written


async def test_private_text_takes_no_part_and_is_never_answered(store, workspace):
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n## 2026-02-01\n- Wifi password is <private>hunter2</private>\n")
    # the private part differs: the visible texts are the same fact
    again = await store.add("Wifi password is <private>swordfish</private>", long=True)
    assert not again.written
    assert "hunter2" not in repr(again) and "swordfish" not in repr(again)
    assert "hunter2" not in str(again.to_dict())
    # a text private as a whole is not checked: written each time
    assert (await store.add("<private>pin 1234</private>", long=True)).written
    assert (await store.add("<private>pin 1234</private>", long=True)).written
    assert read(workspace, "memory/MEMORY.md").count("pin 1234") == 2


async def test_text_only_inside_a_private_block_is_not_a_known_fact(store, workspace):
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n## 2026-02-01\n<private>\n- Sam's door code is 4471\n</private>\n")
    assert (await store.add("Sam's door code is 4471", long=True)).written


async def test_to_dict_extends_the_add_json(store):
    written = (await store.add("Booked flights to Lisbon for May 3")).to_dict()
    assert written["written"] is True and written["added"]["content"].startswith("Booked")
    assert "duplicate_of" not in written
    again = (await store.add("booked flights to Lisbon for May 3")).to_dict()
    assert again["written"] is False and again["added"] is None
    assert again["duplicate_of"]["citation"] == written["added"]["citation"]


async def test_a_file_that_is_not_utf8_is_still_refused(store, workspace):
    from miniclaw.errors import MemoryFileError

    (workspace / "memory/MEMORY.md").write_bytes(b"# Memory\n\n- caf\xe9\n")
    with pytest.raises(MemoryFileError):
        await store.add("anything", long=True)


async def test_a_daily_add_does_not_fail_on_a_memory_md_it_cannot_read(store, workspace):
    (workspace / "memory/MEMORY.md").write_bytes(b"\xff\xfe# M\x00")
    assert (await store.add("Noted despite a damaged MEMORY.md")).written


WORKER = textwrap.dedent("""
    import asyncio, sys, time
    from pathlib import Path
    from miniclaw.memory import MemoryStore

    workspace, long, go = sys.argv[1], sys.argv[2] == "long", Path(sys.argv[3])

    async def main():
        async with MemoryStore(workspace) as store:
            while not go.exists():
                time.sleep(0.002)
            added = await store.add("Two processes add this same fact at once", long=long)
            print("written" if added.written else "duplicate")

    asyncio.run(main())
""")


@pytest.mark.parametrize("kind", ["long", "daily"])
def test_two_processes_adding_the_same_fact_at_once_write_it_once(tmp_path, workspace, kind):
    go = tmp_path / f"go-{kind}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINICLAW_")}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(workspace), kind, str(go)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sorted(out.strip() for out, _ in outs) == ["duplicate"] * 3 + ["written"]
    text = "".join(p.read_text() for p in (workspace / "memory").glob("*.md"))
    assert text.count("Two processes add this same fact") == 1


def test_added_is_exported():
    assert Added._fields[:3] == ("entry", "written", "duplicate_of")


async def test_a_session_sees_a_fact_another_process_added_to_a_large_memory_md(workspace):
    """The door keeps a large MEMORY.md's entries between adds: never stale."""
    body = "".join(f"- Filler fact number {n} about the garden shed\n" for n in range(9000))
    path = write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n" + body)
    old = path.stat().st_mtime - 10
    os.utime(path, (old, old))  # written a while ago, as a user's file is
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        assert (await store.add("Noted while the file is kept")).written
        assert store._kept is not None  # kept: the next add does not parse it again
        assert not (await store.add("filler fact number 12 about the garden shed")).written
        with path.open("a") as file:  # another process (an editor) adds a fact
            file.write("- The spare key is under the blue pot\n")
        assert not (await store.add("the spare key is under the blue pot")).written
