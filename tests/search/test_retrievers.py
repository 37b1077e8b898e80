"""The retriever seam (issue 12 item 3): a retriever defined here, outside miniclaw, is
registered as a mode and fused with BM25; neighbour context is a stage for sequence sources.

`HashedEmbedding` stands in for a semantic retriever: a deterministic bag of "concepts"
(a word, or the concept a small synonym table maps it to) hashed into a vector, scored by
cosine in Python over every entry that passes the filters.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter

import pytest

from miniclaw.search.scoring import (BM25Scorer, Candidates, SearchMode, get_mode,
                                     register_mode)
from miniclaw.search.scoring.fusion import score_fusion
from miniclaw.sources.base import DailyNoteSource
from miniclaw.entries.tokenizer import is_stop_word, tokenize
from tests.conftest import long_term, write

DIMENSIONS = 64
CONCEPTS = {"car": "vehicle", "automobil": "vehicle", "auto": "vehicle"}  # stemmed terms


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    words = Counter(CONCEPTS.get(t, t) for t in tokenize(text) if not is_stop_word(t))
    for word, count in words.items():
        vector[zlib.crc32(word.encode()) % DIMENSIONS] += count
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


class HashedEmbedding:
    """A fake embedding retriever: every entry that passes the filters, by cosine."""

    name = "hashed"
    summary = "hashed bag-of-concepts vectors (a test double for a semantic retriever)"
    bounded = True  # a cosine: fused as it is (scoring/fusion.py)

    def scored_terms(self, terms):
        return terms

    def _similarities(self, index, entry_ids, request):
        query = embed(request.query.text)
        return {i: cosine(query, embed(entry.text))
                for i, entry in index.entries(list(entry_ids)).items()}

    def retrieve(self, index, source, request, k):
        similar = self._similarities(index, index.matching(source, request.filters), request)
        kept = sorted((i for i, s in similar.items() if s > 0), key=lambda i: (-similar[i], i))
        return Candidates({i: similar[i] for i in kept[:k]}, len(kept))

    def parts(self, index, entry_ids, request):
        similar = self._similarities(index, entry_ids, request)
        return {i: {self.name: similar.get(i, 0.0)} for i in entry_ids}


@pytest.fixture
def hybrid():
    """The mode `hybrid`: BM25 and the fake embedding, fused (registered from this module)."""
    from miniclaw.search import scoring

    saved = dict(scoring._MODES)  # miniclaw's own hybrid comes back afterwards
    register_mode("hybrid", lambda: SearchMode("hybrid", (BM25Scorer(), HashedEmbedding())))
    register_mode("hashed", HashedEmbedding)
    yield "hybrid"
    scoring._MODES.clear()
    scoring._MODES.update(saved)


FACTS = ["repair repair repair the fence", "repair repair kit", "car repair booked",
         "car wash on Sunday", "tea with Sam"]


async def test_an_embedding_retriever_fused_with_bm25_changes_the_order(store, workspace,
                                                                         hybrid):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    query = "automobile repair"
    bm25 = [hit.content for hit in await store.search_memories(query, mode="bm25")]
    meaning = [hit.content for hit in await store.search_memories(query, mode="hashed")]
    fused = await store.search(query, mode=hybrid)
    # BM25 sees only "repair" (no entry says "automobile"); the embedding reads "car" as a
    # vehicle too, so it puts the car repair first and finds the car wash.
    assert bm25 == ["repair repair repair the fence", "repair repair kit", "car repair booked"]
    assert meaning[:2] == ["car repair booked", "repair repair repair the fence"]
    assert "car wash on Sunday" in meaning and "tea with Sam" not in meaning
    order = [hit.content for hit in fused.results]
    assert order != bm25
    # BM25's margins count (fusion.py): the fence, with every "repair", stays first; the car
    # wash, which BM25 cannot find, joins below the entries both retrievers found.
    assert order[0] == "repair repair repair the fence" and order[-1] == "car wash on Sunday"
    assert "car wash on Sunday" in order and "tea with Sam" not in order
    assert fused.mode == "hybrid"
    # A fused score is the sum of each retriever's share: explained by retriever.
    explained = await store.search(query, mode=hybrid, explain=True)
    top = explained.results[0]
    assert set(dict(top.explanation)) == {"bm25", "hashed"}
    assert sum(dict(top.explanation).values()) == pytest.approx(top.score)


async def test_one_retriever_keeps_its_own_scores(store, workspace, hybrid):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    plain = await store.search("repair", mode="bm25")
    wrapped = SearchMode.of(BM25Scorer(), "bm25-again")
    register_mode("bm25-again", lambda: wrapped)
    try:
        again = await store.search("repair", mode="bm25-again")
    finally:
        from miniclaw.search import scoring
        scoring._MODES.pop("bm25-again")
    assert [(h.content, h.score) for h in again.results] == \
        [(h.content, h.score) for h in plain.results]
    assert again.total == plain.total == 3


async def test_each_retriever_brings_its_own_number_of_candidates(store, workspace,
                                                                   monkeypatch):
    """A retriever's `candidates` is how deep its list goes in a fusion (the vector's 20,
    BM25 the ranker's 50 when it says nothing); never below the results asked for."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    asked: list[tuple[str, int]] = []

    class Shallow(HashedEmbedding):
        candidates = 2

        def retrieve(self, index, source, request, k):
            asked.append((self.name, k))
            return super().retrieve(index, source, request, k)

    bm25 = BM25Scorer()
    monkeypatch.setattr(bm25, "retrieve", lambda *a: asked.append(("bm25", a[-1])) or
                        BM25Scorer.retrieve(bm25, *a))
    register_mode("shallow", lambda: SearchMode("shallow", (bm25, Shallow())))
    try:
        for limit, depth in ((1, 2), (4, 4)):
            asked.clear()
            found = await store.search("car repair", mode="shallow", limit=limit)
            assert len(found.results) == limit
            assert set(asked) == {("bm25", 50), ("hashed", depth)}
    finally:
        from miniclaw.search import scoring
        scoring._MODES.pop("shallow")


async def test_filters_reach_every_retriever(store, workspace, hybrid):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    fused = await store.search("automobile repair", mode=hybrid, exclude=["wash"])
    assert "car wash on Sunday" not in [hit.content for hit in fused.results]


def test_score_fusion_scales_an_unbounded_list_by_its_best_and_keeps_a_bounded_one():
    shares = score_fusion([{1: 8.0, 2: 2.0}, {2: 0.5, 3: -0.25}], bounded=[False, True])
    # BM25-like scores keep their margins (1 and 0.25), a cosine stays as it is, a
    # negative one counts as 0, and an entry missing from a list gets 0 from it.
    assert shares == {1: (1.0, 0.0), 2: (0.25, 0.5), 3: (0.0, 0.0)}


def test_score_fusion_of_a_list_with_no_positive_score_divides_by_nothing():
    assert score_fusion([{1: 0.0}, {1: 0.3}]) == {1: (0.0, 1.0)}


def test_a_retriever_is_a_mode_by_itself():
    mode = get_mode("bm25")
    assert [r.name for r in mode.retrievers] == ["bm25"]
    assert mode.neighbor_weights and mode.date_weight
    assert get_mode("keyword").neighbor_weights == ()


def _turns(workspace):
    write(workspace, "memory/2026-02-14.md",
          "# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\nSam: any news about Lisbon?\n"
          "\n---\n\n## 09:01:00 UTC\n\nAnna: the trip is booked for the whole family\n")
    write(workspace, "memory/2026-02-13.md",
          "# Daily Note - 2026-02-13\n\n## 09:00:00 UTC\n\nAnna: a trip to Rome\n")


async def test_neighbour_context_applies_to_a_sequence_source(store, workspace):
    _turns(workspace)
    found = await store.search("Lisbon trip", explain=True)
    booked = next(h for h in found.results if h.content.startswith("Anna: the trip"))
    assert "neighbours" in dict(booked.explanation)


async def test_no_neighbour_context_in_a_source_that_is_not_a_sequence(store, workspace,
                                                                        monkeypatch):
    monkeypatch.setattr(DailyNoteSource, "sequence", False)
    _turns(workspace)
    found = await store.search("Lisbon trip", explain=True)
    booked = next(h for h in found.results if h.content.startswith("Anna: the trip"))
    assert "neighbours" not in dict(booked.explanation)
    answers = [hit.content for hit in found.results if hit.content.startswith("Anna")]
    assert answers == ["Anna: a trip to Rome", "Anna: the trip is booked for the whole family"]



def test_a_weighted_list_counts_for_its_share():
    shares = score_fusion([{1: 4.0, 2: 3.0}, {1: 0.2, 2: 0.8}], weights=[1.0, 0.5],
                          bounded=[False, True])
    assert shares == {1: (1.0, 0.1), 2: (0.75, 0.4)}
    assert sum(shares[2]) > sum(shares[1])  # the cosine's margin outweighs BM25's here


class TopOneEmbedding(HashedEmbedding):
    """The fake embedding, but its list holds only its best entry."""

    name = "top-one"

    def retrieve(self, index, source, request, k):
        return super().retrieve(index, source, request, 1)


async def test_every_candidate_is_scored_by_every_retriever(store, workspace, monkeypatch):
    """A BM25 hit the other retriever left out of its (short) list still gets that
    retriever's score, from its `parts()`: being cut from a list is not a score of 0."""
    from miniclaw.search import scoring

    monkeypatch.setitem(scoring._MODES, "fused", lambda: SearchMode(
        "fused", (BM25Scorer(), TopOneEmbedding())))
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search("automobile repair", mode="fused", explain=True)
    parts = {hit.content: dict(hit.explanation) for hit in found.results}
    query = embed("automobile repair")
    for content in ("repair repair repair the fence", "repair repair kit"):
        assert parts[content]["top-one"] == pytest.approx(cosine(query, embed(content)))
        assert parts[content]["top-one"] > 0
    assert parts["repair repair repair the fence"]["bm25"] == pytest.approx(1.0)


class FixedCosine(HashedEmbedding):
    """A cosine retriever whose cosines are set per entry (by its text's first word)."""

    name = "fixed"
    cosines = {"Sam:": 0.8, "Anna:": 0.3, "Bo:": 0.3, "Cy:": 0.8}

    def _similarities(self, index, entry_ids, request):
        return {i: self.cosines[entry.text.split()[0]]
                for i, entry in index.entries(list(entry_ids)).items()}


def _replies(workspace, long_reply: str):
    write(workspace, "memory/2026-02-14.md",
          "# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\nSam: where did the car go?\n"
          "\n---\n\n## 09:01:00 UTC\n\nAnna: at the garage\n"
          "\n---\n\n## 10:00:00 UTC\n\nCy: and the bicycle?\n"
          f"\n---\n\n## 10:01:00 UTC\n\nBo: {long_reply}\n")


async def test_a_short_entry_takes_its_cosine_context_from_its_neighbours(store, workspace,
                                                                          monkeypatch):
    """A cosine (bounded, no terms) gains a share of a neighbour's cosine above its own,
    in full for a short turn and by SHORT_TERMS / length for a long one (neighbours.py)."""
    from miniclaw.search import scoring
    from miniclaw.search.neighbours import SHORT_TERMS

    bm25 = BM25Scorer()
    monkeypatch.setitem(scoring._MODES, "fused", lambda: SearchMode(
        "fused", (bm25, FixedCosine()), bm25.neighbor_weights))
    words = [f"word{n}" for n in range(4 * SHORT_TERMS - 1)]  # with "bo": 4 x SHORT_TERMS
    _replies(workspace, " ".join(words))
    found = await store.search("garage", mode="fused", explain=True, limit=10)
    parts = {hit.content.split()[0]: dict(hit.explanation)["fixed"] for hit in found.results}
    before = dict(bm25.neighbor_weights)[-1]  # the share of the entry right before
    assert parts["Anna:"] == pytest.approx(0.3 + before * (0.8 - 0.3))
    assert parts["Bo:"] == pytest.approx(0.3 + before * (0.8 - 0.3) / 4)
    # a neighbour's lower cosine lends nothing: Sam's and Cy's stay their own (and the
    # 59 minutes between Anna and Cy keep them out of each other's context)
    assert parts["Sam:"] == pytest.approx(0.8) and parts["Cy:"] == pytest.approx(0.8)


async def test_bm25_alone_is_unchanged_by_cosine_context(store, workspace, monkeypatch):
    """The bounded branch is the cosine's only: BM25's neighbour context is the terms an
    entry lacks, as before (a reply holding the query's words gains nothing from them)."""
    _replies(workspace, "the car is at the garage")
    found = await store.search("car garage", mode="bm25", explain=True)
    parts = {hit.content.split()[0]: dict(hit.explanation) for hit in found.results}
    assert "neighbours" not in parts["Bo:"]  # holds both words: nothing missing
    assert "neighbours" in parts["Anna:"]  # lacks "car", which Sam's turn holds


class FlooredCosine(FixedCosine):
    """FixedCosine with a floor: a cosine below `min_similarity` is not a match."""

    min_similarity = 0.2
    cosines = {**FixedCosine.cosines, "Di:": 0.1}

    def retrieve(self, index, source, request, k):
        found = super().retrieve(index, source, request, k)
        kept = {i: s for i, s in found.scores.items() if s >= self.min_similarity}
        return Candidates(kept, len(kept))


async def test_a_neighbour_below_the_cosines_floor_does_not_join(store, workspace,
                                                                 monkeypatch):
    """Context lifts matches only: a turn whose own cosine is no match stays out, however
    close it is to one (and the count of matches stays true)."""
    from miniclaw.search import scoring

    bm25 = BM25Scorer()
    monkeypatch.setitem(scoring._MODES, "floored", lambda: SearchMode(
        "floored", (FlooredCosine(),), bm25.neighbor_weights))
    write(workspace, "memory/2026-02-14.md",
          "# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\nSam: where did the car go?\n"
          "\n---\n\n## 09:01:00 UTC\n\nDi: lunch at noon\n")
    found = await store.search("garage", mode="floored", limit=10)
    assert [hit.content for hit in found.results] == ["Sam: where did the car go?"]
    assert found.total == 1


class AskingCosine(FixedCosine):
    """FixedCosine that, like the vector retriever, does not count its cosine of an entry
    that only asks (`counts`)."""

    cosines = {**FixedCosine.cosines, "Ed:": 0.3}

    def counts(self, text):
        from miniclaw.semantic.retriever import asks_only

        return not asks_only(text)


def _asking_mode(monkeypatch, *retrievers):
    from miniclaw.search import scoring

    bm25 = BM25Scorer()
    monkeypatch.setitem(scoring._MODES, "asking", lambda: SearchMode(
        "asking", (bm25, *retrievers), bm25.neighbor_weights, bm25.date_weight))
    monkeypatch.setitem(scoring._MODES, "fixed", lambda: SearchMode(
        "fixed", retrievers, bm25.neighbor_weights))


async def test_an_entry_that_only_asks_keeps_no_cosine_in_a_fusion(store, workspace,
                                                                   monkeypatch):
    """A question holds no answer: its cosine's share is taken out of the fused score, and
    an entry left with no share is no result; it still lends its cosine to the turn after
    it (the answer), and the retriever alone still finds it."""
    _asking_mode(monkeypatch, AskingCosine())
    _replies(workspace, "a long way from here")
    found = await store.search("garage", mode="asking", explain=True, limit=10)
    parts = {hit.content.split()[0]: dict(hit.explanation) for hit in found.results}
    # Sam's turn (cosine 0.8, no "garage") was a result by its cosine alone; Cy's too
    assert "Sam:" not in parts and "Cy:" not in parts
    before = dict(BM25Scorer().neighbor_weights)[-1]
    assert parts["Anna:"]["fixed"] == pytest.approx(0.3 + before * (0.8 - 0.3))
    alone = await store.search("garage", mode="fixed", limit=10)
    assert "Sam: where did the car go?" in [hit.content for hit in alone.results]


async def test_an_entry_that_only_asks_falls_below_the_first_results(store, workspace,
                                                                     monkeypatch):
    """Taking a share out only lowers a score: the entries read to find the first n are
    those about to be shown, again until none of them loses a share (limit 1: the
    question first, then the answer read)."""
    _asking_mode(monkeypatch, AskingCosine())
    write(workspace, "memory/2026-02-13.md",
          "# Daily Note - 2026-02-13\n\n## 09:00:00 UTC\n\nSam: where is the car?\n")
    write(workspace, "memory/2026-02-14.md",
          "# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\nEd: the car is at the garage\n")
    plain = await store.search("car", mode="bm25", limit=2)
    assert [hit.content.split()[0] for hit in plain.results] == ["Sam:", "Ed:"]
    found = await store.search("car", mode="asking", limit=1)
    assert [hit.content for hit in found.results] == ["Ed: the car is at the garage"]
    both = await store.search("car", mode="asking", limit=2, explain=True)
    parts = {hit.content.split()[0]: dict(hit.explanation) for hit in both.results}
    assert list(parts) == ["Ed:", "Sam:"]
    assert parts["Sam:"]["fixed"] == 0.0 and parts["Sam:"]["bm25"] == pytest.approx(1.0)
    assert parts["Ed:"]["fixed"] == pytest.approx(0.3)
    assert both.results[1].score == pytest.approx(1.0)


async def test_a_retriever_without_counts_keeps_every_share(store, workspace, monkeypatch):
    _asking_mode(monkeypatch, FixedCosine())
    _replies(workspace, "a long way from here")
    found = await store.search("garage", mode="asking", limit=10)
    assert "Sam: where did the car go?" in [hit.content for hit in found.results]


async def test_a_fused_search_asks_the_index_about_an_entry_once(store, workspace,
                                                                 monkeypatch):
    """In a sequence source, the neighbour stages of BM25, of the cosine, and BM25's context
    for the cosine's candidates ask about many of the same entries: each entry's neighbours,
    filter check and each retriever's parts are read once per search of a source
    (`neighbours.Lookups`), and the scores are those of reading them every time."""
    from miniclaw.search import scoring
    from miniclaw.index.search_index import SearchIndex

    bm25 = BM25Scorer()
    monkeypatch.setitem(scoring._MODES, "fused", lambda: SearchMode(
        "fused", (bm25, HashedEmbedding()), bm25.neighbor_weights))
    turns = ["Sam: the car broke down", "Anna: call the garage", "Sam: which garage?",
             "Anna: the one near the car wash", "Sam: repair booked", "Anna: tea later?",
             "Sam: automobile fixed", "Anna: great news"]
    write(workspace, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n" + "".join(
        f"\n## 09:{n:02d}:00 UTC\n\n{turn}\n" for n, turn in enumerate(turns)))
    from miniclaw.search import neighbours
    from miniclaw.search import ranker

    class ReadEveryTime(neighbours.Lookups):
        """Lookups that keep nothing: each question read from the index again."""

        def __getattribute__(self, name):
            if name in ("around", "passing", "lengths", "parts"):
                for kept in ("_around", "_passes", "_lengths", "_parts"):
                    object.__getattribute__(self, kept).clear()
            return object.__getattribute__(self, name)

    monkeypatch.setattr(ranker, "Lookups", ReadEveryTime)
    found = await store.search("car garage repair", mode="fused", explain=True, limit=8)
    monkeypatch.setattr(ranker, "Lookups", neighbours.Lookups)
    assert len(found.results) >= 5
    asked: dict[str, list[int]] = {"neighbours": [], "filter_ids": [], "bm25": [], "hashed": []}
    for name in ("neighbours", "filter_ids"):
        real = getattr(SearchIndex, name)

        def spy(self, entry_ids, *args, _real=real, _name=name, **kwargs):
            asked[_name].extend(entry_ids)
            return _real(self, entry_ids, *args, **kwargs)
        monkeypatch.setattr(SearchIndex, name, spy)
    for retriever in (BM25Scorer, HashedEmbedding):
        real_parts = retriever.parts

        def parts(self, index, entry_ids, request, _real=real_parts):
            asked[self.name].extend(entry_ids)
            return _real(self, index, entry_ids, request)
        monkeypatch.setattr(retriever, "parts", parts)
    again = await store.search("car garage repair", mode="fused", explain=True, limit=8)
    assert all(asked[name] for name in ("neighbours", "bm25", "hashed")), asked
    for name, ids in asked.items():
        assert len(ids) == len(set(ids)), (name, ids)
    assert [(h.content, h.score, h.explanation) for h in again.results] == \
        [(h.content, h.score, h.explanation) for h in found.results]
