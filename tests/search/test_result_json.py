"""The search JSON is a contract (docs/ARCHITECTURE.md): the same files and query give the
same bytes. The expected outputs in `golden/` were written by the code before results became
dataclasses and hints became data; later changes may only add fields to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from miniclaw.cli.render import search_json
from tests.conftest import long_term, write
from tests.search.test_search_features import write_note

GOLDEN = Path(__file__).parent / "golden"

SEARCHES = {
    "explained": dict(query="atlas budget", days=None, explain=True),
    "corrected": dict(query="atlsa", days=None),
    "few_in_window": dict(query="zanzibar ferry", days=30),
    "filtered": dict(query="coffee", days=None, category="preference", tags=["drink"]),
    "narrowing": dict(query="coffee", days=None),
    "nothing": dict(query="+walrus the", days=None),
}


@pytest.fixture
def memories(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md", long_term(
        ("2026-01-05", ["Prefers dark roast coffee\n<!-- @category: preference -->\n"
                        "<!-- @tag: drink -->",
                        "The atlas budget is 40k\n<!-- @category: decision -->"]),
        ("Undated", ["Zanzibar trip in June\n<!-- @tag: travel -->"])))
    write_note(workspace, "2026-02-13", "Sam approved the atlas budget",
               "Sam likes coffee at nine")
    write_note(workspace, "2025-10-01", "Took the zanzibar ferry at dawn")
    return workspace


@pytest.mark.parametrize("name", sorted(SEARCHES))
async def test_search_json_is_byte_identical_to_the_recorded_output(store, memories, name,
                                                                     monkeypatch):
    from miniclaw.semantic import model as embedding

    # recorded where the embedding model is not installed (it adds the by_meaning hint)
    monkeypatch.setattr(embedding, "installed", lambda: False)
    found = await store.search(**SEARCHES[name])
    expected = (GOLDEN / f"{name}.json").read_text(encoding="utf-8")
    assert search_json(found) + "\n" == expected


def test_results_are_frozen_records_built_by_keyword():
    import dataclasses
    from datetime import date

    from miniclaw.search.results import RankedMemory, SearchResults

    hit = RankedMemory(content="a", excerpt="a", score=1.0, source="long_term",
                       date=date(2026, 1, 5), path="memory/MEMORY.md", line_start=4,
                       line_end=4, category=None, tags=())
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        RankedMemory("a", "a", 1.0, "long_term", None, "memory/MEMORY.md", 4, 4, None, ())
    found = SearchResults(query="a", mode="bm25", total=1, results=[hit])
    assert found.to_dict()["results"][0]["citation"] == "memory/MEMORY.md:4"
    assert not hasattr(hit, "__dict__")  # slots: no per-result dict
