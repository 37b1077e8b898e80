"""Past chat questions are not memories (issue 39): "what is my job?" asked yesterday came
back above "started at the adoption agency" in search, context, the echo chat and MCP.

The choice was measured here, on a small workspace as a person's would be after a few weeks
(facts in MEMORY.md and the notes, chats asking about them, and things said only in a chat):
each question is searched (bm25, all history) and we look at where its answer ranks.

    ASKED_WEIGHT     answer first (of 8)   a question above its answer   chat-only facts found
    1.0 (before)     0                     8                             2 of 2
    0.5              5                     2                             2 of 2
    0.25             7                     0                             2 of 2
    0.1 (chosen), 0  7                     0                             2 of 2
    no transcripts   7                     0                             0 of 2

(The eighth: "where do I live?" finds "My sister Lena lives in Berlin" first by its words,
with or without chats.)
0.1 rather than 0.25: in hybrid, a question found by its words has a fused share up to 1,
and must stay below a statement found by meaning (a cosine of 0.2 at least): 0.25 did not.
A weight, not leaving transcripts out: what the user told the assistant only in a chat ("I
moved to Lyon") stays findable, and a question only sinks below what was stated. The table
is `test_the_measurement` below, rerun on each run.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from miniclaw.memory import MemoryStore
from miniclaw.search import ranker
from tests.conftest import NOW, daily_note, long_term, write

FACTS = {  # question -> the words of the entry that answers it
    "what is my job?": "Started a new job at the adoption agency as a case worker",
    "where do I live?": "We live in the flat on Rue Oberkampf, Paris",
    "when is my dentist appointment?": "Dentist appointment moved to March 3 at 10:00",
    "what is my sister's name?": "My sister Lena lives in Berlin",
    "what car do I drive?": "My car is a used Peugeot 208, blue",
    "what is my wifi password hint?": "Wifi password hint: the cat's birthday",
    "who is my manager?": "Manager at the agency is Farah Haddad",
    "what is my gym schedule?": "Gym schedule: Tuesday and Friday evenings, climbing",
}
SAID_IN_CHAT = {  # question -> what the user said only in a chat
    "where did I move?": "I moved to Lyon last month for the new role",
    "what allergy do I have?": "I have a peanut allergy, please remember it",
}


def _record(role: str, content: str, when: datetime, session: str) -> str:
    return json.dumps({"role": role, "content": content, "session_id": session,
                       "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ")}) + "\n"


@pytest.fixture
def lived_in(workspace: Path) -> Path:
    facts = list(FACTS.values())
    write(workspace, "memory/MEMORY.md", long_term(("Facts", facts[:4])))
    for n, fact in enumerate(facts[4:]):
        day = (NOW - timedelta(days=3 + n)).date().isoformat()
        write(workspace, f"memory/{day}.md", daily_note(day, [fact], ["09:00:00"]))
    when = NOW - timedelta(days=1)
    lines = []
    for question in FACTS:  # asked yesterday; the answers were recalls (not kept)
        lines.append(_record("user", question, when, "s1"))
        when += timedelta(minutes=1)
    for said in SAID_IN_CHAT.values():
        lines.append(_record("user", said, when, "s2"))
        lines.append(_record("assistant", "Noted, thank you for telling me.", when, "s2"))
    write(workspace, "sessions/s1.jsonl", "".join(lines))
    return workspace


async def _measure(workspace: Path, **options) -> tuple[int, int, int]:
    """(answers ranked first, questions ranked above their answer, chat facts in the top 5)."""
    first = above = chat = 0
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        for question, answer in FACTS.items():
            found = (await store.search(question, days=None, mode="bm25", **options)).results
            texts = [hit.content for hit in found]
            first += bool(texts) and texts[0] == answer
            where = texts.index(answer) if answer in texts else len(texts)
            above += any(text == question for text in texts[:where])
        for question, said in SAID_IN_CHAT.items():
            found = (await store.search(question, days=None, mode="bm25", **options)).results
            chat += said in [hit.content for hit in found]
    return first, above, chat


async def test_the_measurement(lived_in: Path, monkeypatch):
    table = {}
    for weight in (1.0, 0.5, 0.25, 0.1, 0.0):
        monkeypatch.setattr(ranker, "ASKED_WEIGHT", weight)
        table[weight] = await _measure(lived_in)
    monkeypatch.setattr(ranker, "ASKED_WEIGHT", 0.1)
    table["no transcripts"] = await _measure(lived_in, sources=["long_term", "daily_note"])
    print(table)
    # the chosen weight: as good as leaving chats out, and what was said there still found
    assert table[0.1][:2] == table["no transcripts"][:2] and table[0.1][2] == 2
    assert table[1.0][1] > 0  # before: questions above their answers
    assert table["no transcripts"][2] == 0  # leaving chats out loses what was said there


@pytest.mark.parametrize("text, asks", [
    ("what is my job?", True), ("Where do I live? And my office?", True),
    ("Oh nice! Where is it?", True), ("I started at the agency. What should I wear?", False),
    ("I moved to Lyon", False), ("", False)])
def test_a_question_is_a_message_that_only_asks(text, asks):
    from miniclaw.text import asks_only

    assert asks_only(text) is asks


@pytest.fixture
def advised(workspace: Path) -> Path:
    """A chat where the assistant's reply repeats the user's words around advice."""
    when = NOW - timedelta(days=2)
    write(workspace, "sessions/s3.jsonl", "".join([
        _record("user", "My favourite tea is jasmine green tea from Fujian", when, "s3"),
        _record("assistant", "Favourite tea ideas: jasmine tea, green tea, oolong tea, "
                "black tea; a favourite tea tastes best brewed at 80 degrees.", when, "s3")]))
    return workspace


async def _first(workspace: Path, query: str) -> str:
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        return (await store.search(query, days=None, mode="bm25")).results[0].content


async def test_a_question_about_the_user_finds_what_the_user_said(advised: Path, monkeypatch):
    user_said = "My favourite tea is jasmine green tea from Fujian"
    assert await _first(advised, "what is my favourite tea?") == user_said
    # by its words alone, the assistant's reply is first
    monkeypatch.setattr(ranker, "OWN_WEIGHT", 0.0)
    assert await _first(advised, "what is my favourite tea?") != user_said


async def test_a_question_not_about_the_user_ranks_by_its_words(advised: Path, monkeypatch):
    plain = await _first(advised, "favourite tea jasmine")
    monkeypatch.setattr(ranker, "OWN_WEIGHT", 0.0)
    assert await _first(advised, "favourite tea jasmine") == plain


@pytest.mark.parametrize("text, about", [
    ("what is my job?", True), ("Where did I go?", True), ("I’m looking for the recipe", True),
    ("tell me again", True), ("the team's mine schedule", True),
    ("what is Caroline's job?", False), ("items in the list", False), ("", False)])
def test_a_query_about_the_user_speaks_in_the_first_person(text, about):
    assert ranker._about_user(text) is about
