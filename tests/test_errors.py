"""Errors say what they concern as data (issue 12): `path` for a memory file, `query` for a
search, so a program can act without reading the message."""

from __future__ import annotations

import os

import pytest

from miniclaw.errors import MemoryFileError, MiniclawError, QueryError, UsageError


async def test_a_query_error_carries_the_query(store):
    with pytest.raises(QueryError) as caught:
        await store.search("-coffee")
    assert caught.value.query == "-coffee" and caught.value.path is None


async def test_a_memory_file_that_is_not_a_file_error_carries_its_path(store, workspace):
    os.mkfifo(workspace / "memory/MEMORY.md")  # a FIFO would block a reader: refused
    with pytest.raises(MemoryFileError) as caught:
        await store.add_long_term("Likes tea")
    assert caught.value.path == "memory/MEMORY.md" and caught.value.query is None


async def test_a_note_left_inside_a_private_block_error_carries_its_path(store, workspace):
    (workspace / "memory/2026-02-14.md").write_text("<private>\nsecret\n", encoding="utf-8")
    with pytest.raises(MemoryFileError) as caught:
        await store.add_daily_note("Likes tea")
    assert caught.value.path == "memory/2026-02-14.md"
    assert "secret" not in str(caught.value)


def test_errors_without_a_subject_have_none_and_keep_their_message():
    error = UsageError("bad")
    assert (str(error), error.path, error.query) == ("bad", None, None)
    assert isinstance(error, MiniclawError)
