"""The rows a sync writes: encodings kept exactly as they were when made cheaper."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.entries.entry import NO_META, Entry, Meta
from miniclaw.index.sync import _meta_json

_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10)
                       | st.dates(), lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=8), _values, max_size=5))
def test_meta_is_stored_as_json_dumps_wrote_it(meta):
    """One encoder kept for every entry writes what `json.dumps` with the same options did
    (keys sorted, non-ASCII as is, other values by `str`), so indexes stay comparable."""
    expected = json.dumps(dict(meta), sort_keys=True, ensure_ascii=False, default=str)
    assert _meta_json(meta) == expected
    assert _meta_json(meta) == expected  # the kept encoder, the second time


_entry_terms = st.lists(st.integers(0, 60), unique=True, max_size=12).flatmap(
    lambda numbers: st.tuples(st.just(numbers), st.none() | st.lists(
        st.sampled_from([1, 2, 3, 1023, 1024, 70_000]), min_size=len(numbers),
        max_size=len(numbers))))


@settings(deadline=None)
@given(st.lists(_entry_terms, max_size=25))
def test_packed_blocks_hold_each_entrys_postings(entries):
    """`_packed` (appends done by `map` in C) gives, for each term in number order, the
    postings of the entries holding it in entry order: place << 10 | tf, tf capped at 1,023."""
    from array import array

    from miniclaw.index.sync import _packed

    terms = [(array("I", numbers).tobytes(),
              array("I", frequencies).tobytes() if frequencies else None, len(numbers))
             for numbers, frequencies in entries]
    expected: dict[int, list[int]] = {}
    for place, (numbers, frequencies) in enumerate(entries):
        for i, number in enumerate(numbers):
            tf = frequencies[i] if frequencies else 1
            expected.setdefault(number, []).append(place << 10 | min(tf, 1023))
    blocks = _packed(terms)
    assert blocks.numbers == sorted(expected)
    assert blocks.sizes == [len(expected[n]) for n in blocks.numbers]
    assert [json.loads(text) for text in blocks.postings] == [expected[n] for n in blocks.numbers]


def _entry_keys_before(entries):
    """`sync._entry_keys` as of 93140e5 (a Counter of texts seen, an encoder per call)."""
    from collections import Counter

    from miniclaw.index.sync import content_hash

    days: dict = {None: None}
    seen: Counter = Counter()
    keys = []
    for ordinal, entry in enumerate(entries):
        day = days.setdefault(entry.date, entry.date and entry.date.isoformat())
        digest = content_hash(entry.text)
        meta = (json.dumps(dict(entry.meta), sort_keys=True, ensure_ascii=False, default=str)
                if entry.meta else None)
        keys.append(((digest, seen[digest]), (ordinal, entry.line_start, entry.line_end, day,
                                              entry.time, entry.category, " ".join(entry.tags),
                                              meta, entry.text)))
        seen[digest] += 1
    return keys


_entries = st.lists(st.builds(
    Entry, st.sampled_from(["a", "b", "caf\u00e9", "a b"]) | st.text(max_size=6),
    st.just("transcripts"), st.just("p"), st.integers(1, 5), st.integers(1, 5),
    st.none() | st.dates(), st.none() | st.just("10:30:00"), st.none() | st.just("decision"),
    st.lists(st.sampled_from(["x", "y"]), max_size=2).map(tuple),
    st.just(NO_META) | st.dictionaries(st.text(max_size=4), _values, max_size=3).map(Meta)),
    max_size=8)


@settings(deadline=None)
@given(_entries)
def test_entry_keys_are_what_they_were(entries):
    """Each entry's identity (text hash, occurrence) and row data, as before they were made
    by unpacking each entry and with a dict of texts seen."""
    from miniclaw.index.sync import _entry_keys

    assert _entry_keys(entries) == _entry_keys_before(entries)
