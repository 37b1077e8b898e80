"""The clustering under `memory tidy`: pure functions of the texts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.entries import similar
from miniclaw.tidy import grouping


def group(texts):
    return grouping.group(texts, similar.same_fact_folds, similar.similarity_of_folds,
                          similar.fold)


def test_near_copies_cluster_and_a_changed_number_is_a_pair_not_a_duplicate():
    texts = ["Prefers dark roast coffee", "prefers dark roast coffee.",
             "Sam's rent is 1200 dollars a month", "Sam's rent is 1350 dollars a month",
             "Met Alex at the climbing gym", "Bought new climbing shoes"]
    groups, pairs = group(texts)
    assert [g.members for g in groups] == [(0, 1)]
    assert groups[0].score == 1.0
    assert [(p.first, p.second) for p in pairs] == [(2, 3)]
    assert pairs[0].reason in ("near", "values")
    long = ["The quarterly budget for the atlas project is 5,000 euros after the review",
            "The quarterly budget for the atlas project is 6,000 euros after the review"]
    assert [p.reason for p in group(long)[1]] == ["near"]


def test_a_cluster_is_joined_through_its_links_and_scored_by_its_weakest():
    texts = ["The kayak trip is booked for Saturday morning",
             "the kayak trip is booked for saturday morning!",
             "The kayak trip is booked for Saturday mornings"]
    groups, _ = group(texts)
    assert len(groups) == 1 and groups[0].members == (0, 1, 2)
    assert groups[0].score < 1.0


def test_the_values_rule():
    rent = grouping.terms_of("Monthly rent for the flat is 1200 euros")
    raised = grouping.terms_of("Monthly rent for the flat is 1350 euros")
    assert grouping.conflict(rent, raised)[1] == "values"
    more = grouping.terms_of("Monthly rent for the flat is 1200 euros plus 80 for heating")
    assert grouping.conflict(rent, more) is None  # a value only added is a detail
    other = grouping.terms_of("Bought a bike for the commute")
    assert grouping.conflict(rent, other) is None


def test_a_changed_name_is_a_conflict_not_a_duplicate():
    """Merging these would drop the new name: a conflict, never a cluster."""
    texts = ["Caroline: I met Melanie at the pottery class near the old library on Friday evening",
             "Caroline: I met Jolene at the pottery class near the old library on Friday evening"]
    groups, pairs = group(texts)
    assert groups == [] and [(p.first, p.second, p.reason) for p in pairs] == [(0, 1, "near")]


def test_repeats_without_rare_words_still_cluster():
    texts = ["Went to the gym"] * 3 + ["went to the gym."] + [f"note {i} about topic {i}" for i in range(200)]
    groups, _ = group(texts)
    assert groups[0].members == (0, 1, 2, 3)


def test_texts_that_fold_to_nothing_are_no_cluster():
    groups, pairs = group(["...", "---", "!!"])
    assert groups == [] and pairs == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=30))
def test_any_texts_group_without_error_and_each_index_once(texts):
    groups, pairs = group(texts)
    seen = [i for g in groups for i in g.members]
    assert len(seen) == len(set(seen))
    assert all(len(g.members) > 1 and 0 <= g.score <= 1 for g in groups)
    for p in pairs:
        assert p.first < p.second and not any(p.first in g.members and p.second in g.members
                                              for g in groups)


def test_words_that_differ_after_a_shared_start_do_not_break_the_comparison():
    """Found by benchmarks/tidy.py on LongMemEval's turns: two words sharing all but their
    last two and one letters (`abcxy`, `abcz`) made the typo check index past a word."""
    texts = ["We went to the lake cabin on the weekend with abcxy friends",
             "We went to the lake cabin on the weekend with abcz friends"]
    groups, pairs = group(texts)
    assert groups == [] and len(pairs) == 1
