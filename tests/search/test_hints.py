"""Hints and warnings are data (issue 12): the library returns a kind and parameters, never
CLI flags and never a log line per search; each caller words them in its own terms."""

from __future__ import annotations

import json
import logging

import pytest

from miniclaw.cli.render import Style, search_json, search_text, warning_lines
from miniclaw.search.hints import Hint, SearchWarning, describe
from miniclaw.memory_tools import MemoryTools
from tests.conftest import long_term, write
from tests.search.test_retrievers import hybrid  # noqa: F401 (a fixture)
from tests.search.test_search_features import write_note

BAD_NOTE = b"## 09:00:00 UTC\n\nzanzibar \xff ferry\n"


@pytest.fixture
def damaged(workspace):
    write(workspace, "memory/MEMORY.md", long_term(
        ("2026-01-05", ["Prefers dark roast coffee\n<!-- @category: preference -->"])))
    write_note(workspace, "2026-02-13", "Sam likes coffee at nine")
    (workspace / "memory/2026-02-12.md").write_bytes(BAD_NOTE)
    return workspace


@pytest.fixture
def miniclaw_log(caplog, monkeypatch):
    monkeypatch.setattr(logging.getLogger("miniclaw"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="miniclaw")
    return caplog


async def test_a_damaged_file_is_a_returned_warning_with_results_and_no_log_line(
        store, damaged, miniclaw_log):
    found = await store.search("zanzibar", days=None)
    assert [hit.content for hit in found.results] == ["zanzibar \ufffd ferry"]
    [warning] = found.warnings
    assert warning.kind == "file" and warning.params["path"] == "memory/2026-02-12.md"
    assert "memory/2026-02-12.md" in warning.params["message"]
    assert "UTF-8" in warning.params["message"]
    assert not [r for r in miniclaw_log.records if r.levelno >= logging.WARNING]
    assert found.to_dict()["warnings"] == [{"kind": "file", "path": "memory/2026-02-12.md",
                                           "message": warning.params["message"]}]
    assert warning_lines(found) == [f"Warning: {warning.params['message']}"]


async def test_hints_are_kinds_and_parameters_worded_by_each_caller(store, damaged):
    write_note(damaged, "2025-12-01", "Older: a kite")  # outside the window: days may widen
    found = await store.search("coffee", days=30)
    assert found.hints == (Hint("widen_days", days=30), Hint("narrow_category",
                                                            category="preference"))
    assert [hint.to_dict() for hint in found.hints] == [
        {"kind": "widen_days", "days": 30}, {"kind": "narrow_category", "category": "preference"}]
    # the library and the chat: plain words; the CLI: its flags; the tools: their arguments
    assert found.suggestions == (
        "search all history (only the last 30 days of daily notes were searched)",
        "narrow to the category preference (found among these results)")
    cli = json.loads(search_json(found))["suggestions"]
    assert cli == ["search all history with --all (only the last 30 days of daily notes were "
                   "searched)", "--category preference (found among these results)"]
    tools = (await MemoryTools(store).call("search_memory", {"query": "coffee", "days": 30}))
    assert tools["hints"] == [hint.to_dict() for hint in found.hints]
    assert tools["suggestions"][0].startswith("days 36500 searches all history")
    assert not any("--" in text for text in tools["suggestions"] + list(found.suggestions))


async def test_no_results_suggest_in_plain_words_in_the_chat(store, damaged):
    found = await store.search("+walrus coffee", days=None)
    text = search_text(found, Style(False), {})
    assert "drop 'walrus': no memory contains it" in text
    assert "drop a requirement (+word or \"phrase\")" in text and "--require" not in text


def test_a_hint_is_a_frozen_record_equal_by_kind_and_parameters():
    hint = Hint("drop_word", word="zanzibar")
    assert hint == Hint("drop_word", word="zanzibar") != Hint("drop_word", word="ferry")
    assert hint != SearchWarning("drop_word", word="zanzibar")
    assert len({hint, Hint("drop_word", word="zanzibar")}) == 1
    assert repr(hint) == "Hint('drop_word', word='zanzibar')"
    with pytest.raises(AttributeError):
        hint.kind = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        hint.params["word"] = "x"  # type: ignore[index]


def test_every_kind_has_plain_wording_and_an_unknown_kind_reads_as_its_name():
    assert describe(Hint("fewer_words")) == "use fewer words"
    assert describe(Hint("some_new_kind", n=1)) == "some new kind"
    assert describe(Hint("widen_days", days=7), {"widen_days": "--all ({days})"}) == "--all (7)"


MEANING_FACTS = ["car repair booked", "car wash on Sunday", "tea with Sam"]


@pytest.mark.parametrize("mode", ["hybrid", "hashed"])
async def test_a_search_that_found_memories_by_meaning_never_says_drop_a_word(
        store, workspace, hybrid, mode):
    """No memory holds "automobile", but the embedding reads it as a car: the results are
    found because of that word, so dropping it is wrong advice (it was given before)."""

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", MEANING_FACTS)))
    found = await store.search("automobile", mode=mode, limit=5, correct=False)
    assert [hit.content for hit in found.results][:2] == MEANING_FACTS[:2]
    assert "drop_word" not in [hint.kind for hint in found.hints]
    assert not any("drop" in text for text in found.suggestions)


@pytest.mark.parametrize("mode", ["hybrid", "hashed"])
async def test_a_meaning_search_that_found_nothing_does_not_blame_a_word(store, workspace,
                                                                         hybrid, mode):
    """Every memory is filtered out: a word absent from them is not why, in a mode that
    matches by meaning (dropping it would find nothing more); other hints still come."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", MEANING_FACTS)))
    found = await store.search("automobile", mode=mode, category="nothing-here", days=None,
                               correct=False)
    assert found.results == []  # the category that filtered them out is named, no word is
    assert [hint.kind for hint in found.hints] == ["drop_filter", "other_words"]


async def test_words_only_modes_still_say_which_word_no_memory_holds(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", MEANING_FACTS)))
    for mode in ("bm25", "keyword"):
        found = await store.search("automobile", mode=mode, correct=False)
        assert found.results == [] and Hint("drop_word", word="automobile") in found.hints
        # with results, the word is not why there are few: no advice to drop it
        found = await store.search("automobile tea", mode=mode, correct=False)
        assert [hit.content for hit in found.results] == ["tea with Sam"]
        assert "drop_word" not in [hint.kind for hint in found.hints]


async def test_a_category_or_tag_no_memory_has_is_named_when_the_search_finds_nothing(
        store, damaged):
    """`-c offee` (or `search -coffee`, read as `-c offee`) empties the search: the hint
    names the filter to drop, not only 'try broader words'; a filter that some memory has
    is not blamed."""
    found = await store.search("coffee", days=None, category="offee", tags=["nope"])
    assert not found.results
    assert Hint("drop_filter", filter="category", value="offee") in found.hints
    assert Hint("drop_filter", filter="tag", value="nope") in found.hints
    assert describe(found.hints[found.hints.index(Hint(
        "drop_filter", filter="category", value="offee"))]) == \
        "drop the category 'offee': no memory has it"
    assert "drop --category offee: no memory has it" in search_text(found, Style(False))
    held = await store.search("ferry", days=None, category="preference")
    assert not held.results and not [h for h in held.hints if h.kind == "drop_filter"]
    found_some = await store.search("coffee", days=None, category="preference")
    assert found_some.results and not [h for h in found_some.hints if h.kind == "drop_filter"]


async def test_a_word_search_that_found_nothing_points_to_meaning_only_where_it_can_run(
        store, workspace, monkeypatch):
    """bm25 (the CLI's default) found nothing: where the embedding model is installed, the
    hint says hybrid finds by meaning; where it is not, nothing points to a mode that would
    only say it cannot run. A search that found something gets no such hint."""
    from miniclaw.semantic import model as embedding

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", ["Allergic to penicillin"])))
    monkeypatch.setattr(embedding, "installed", lambda: True)
    found = await store.search("drug reactions", days=None)
    assert not found.results and Hint("by_meaning") in found.hints
    assert "--mode hybrid: it finds memories by meaning, without the query's words" in \
        search_text(found, Style(False))
    assert Hint("by_meaning") not in (await store.search("penicillin", days=None)).hints
    monkeypatch.setattr(embedding, "installed", lambda: False)
    assert Hint("by_meaning") not in (await store.search("drug reactions", days=None)).hints
