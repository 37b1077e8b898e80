"""The rows a sync writes: encodings kept exactly as they were when made cheaper."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.memory.sync import _meta_json

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
