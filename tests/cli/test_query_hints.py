"""Hints for a query that starts with -word, and when meaning search is suggested (reviewed 2026-11-27)."""
from __future__ import annotations

import pytest

from miniclaw.search.hints import Hint
from tests.cli.test_cli import assert_usage_error, run
from tests.conftest import long_term, write


@pytest.mark.parametrize("typo", ["-json", "-all", "-explain", "-since", "-limit"])
def test_a_one_dash_long_option_is_not_called_a_query(runner, workspace, typo):
    """`search coffee -json` meant --json: the hint must not say to search for '-json'."""
    line = assert_usage_error(run(runner, workspace, "search", "coffee", typo))
    assert f'-- "{typo} ..."' not in line


def test_a_negative_number_is_not_called_a_minus_word(runner, workspace):
    """`-- "-50 ..."` is a query that EXCLUDES 50: the hint's advice cannot find '-50'."""
    line = assert_usage_error(run(runner, workspace, "search", "-50", "degrees"))
    assert '-- "-50 ...' not in line


def test_the_hint_names_the_word_that_failed_not_an_option_value(runner, workspace):
    line = assert_usage_error(run(runner, workspace, "search", "-q", "-dx", "-draft"))
    assert '-- "-draft ..."' in line, line


async def test_by_meaning_is_not_offered_when_a_filter_no_memory_has_emptied_it(
        store, workspace, monkeypatch):
    """Hybrid with the same --tag cannot find anything either."""
    from miniclaw.semantic import model as embedding

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", ["Allergic to penicillin"])))
    monkeypatch.setattr(embedding, "installed", lambda: True)
    found = await store.search("drug reactions", days=None, tags=["nope"])
    assert Hint("drop_filter", filter="tag", value="nope") in found.hints
    assert Hint("by_meaning") not in found.hints


def test_a_one_dash_long_option_is_named_as_the_option_meant(runner, workspace):
    line = assert_usage_error(run(runner, workspace, "search", "coffee", "-json"))
    assert line == "Error: No such option: -j (did you mean --json?)"


async def test_by_meaning_is_not_offered_when_the_model_did_not_load(store, workspace,
                                                                    monkeypatch):
    from miniclaw.semantic import model as embedding
    from miniclaw.search import scoring

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", ["Allergic to penicillin"])))
    monkeypatch.setattr(embedding, "installed", lambda: True)
    assert Hint("by_meaning") in (await store.search("drug reactions", days=None)).hints
    monkeypatch.setattr(scoring, "_unloadable", "the embedding model did not load here (out of memory)")
    assert Hint("by_meaning") not in (await store.search("drug reactions", days=None)).hints
