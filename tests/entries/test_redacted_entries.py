"""`parsing.redacted_entries` checks every record again after its source parsed it: the
same entries as the loop it replaced (which rebuilt an entry once per change), privacy
included."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from miniclaw.entries.entry import NO_META, Entry, Meta
from miniclaw.entries.privacy import may_hold_private, visible_text
from miniclaw.entries.parsing import _redacted, redacted_entries

_PIECES = st.sampled_from(["<private>", "</private>", "<PRIVATE reason='x'>", "\uff1cprivate\uff1e",
                           "<pri\u200bvate>", "<", ">", "---", "secret", " ", "\n", "caf\u00e9",
                           "\u226e", "ok", "\\u0070rivate", "plain words"])
_TEXT = st.lists(_PIECES, max_size=8).map("".join)
_VALUE = st.recursive(st.none() | st.integers() | st.booleans() | _TEXT,
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
                      max_leaves=6)
_META = st.one_of(st.just(NO_META), st.just({}),
                  st.dictionaries(st.sampled_from(["session", "role", "timestamp", "x"]), _VALUE,
                                  max_size=4),
                  st.dictionaries(st.sampled_from(["session", "role"]), _TEXT, max_size=2).map(Meta))
_ENTRY = st.builds(Entry, _TEXT, st.sampled_from(["", "transcripts", "other"]),
                   st.just("sessions/a.jsonl"), st.integers(1, 9), st.integers(1, 9),
                   meta=_META)


def _old_redacted_entries(name: str, entries: list[Entry]) -> list[Entry]:
    """The loop of `redacted_entries` as of 93140e5, after its source parsed the file."""
    def plain(value: object) -> bool:
        if isinstance(value, str):
            return not may_hold_private(value) and "---" not in value
        return not isinstance(value, (list, dict))

    out = []
    for entry in entries:
        if may_hold_private(entry.text):
            clean = visible_text(entry.text).strip()
            if not clean:
                continue
            entry = entry._replace(text=clean)
        meta = entry.meta
        if meta and not all(plain(value) for value in meta.values()):
            meta = {key: _redacted(value) for key, value in meta.items()}
        if meta and type(meta) is not Meta:
            entry = entry._replace(meta=Meta(meta))
        out.append(entry if entry.source == name else Entry._make((entry[0], name, *entry[2:])))
    return out


@settings(max_examples=500, deadline=None)
@given(st.lists(_ENTRY, max_size=5))
@example([Entry("a <private>secret</private> b", "", "p", 1, 1,
                meta={"session": "s\uff1cprivate\uff1ex", "role": ["<private>", 1]})])
@example([Entry("text", "transcripts", "p", 1, 1,
                meta=Meta({"session": "---\nprivate: true\n---\nsecret", "role": " --- "}))])
def test_records_are_redacted_as_before(entries):
    new = redacted_entries("transcripts", lambda visible: entries, "")
    old = _old_redacted_entries("transcripts", entries)
    assert new == old
    assert [type(entry.meta) for entry in new] == [type(entry.meta) for entry in old]
    assert [dict(entry.meta) for entry in new] == [dict(entry.meta) for entry in old]
