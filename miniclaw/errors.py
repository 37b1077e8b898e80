"""The one exception tree of miniclaw.

    MiniclawError                  anything miniclaw raises on purpose
    ├── UsageError                 the caller asked for something invalid (CLI exit code 2)
    │   ├── QueryError             a search query that cannot be searched
    │   └── WorkspaceNotFoundError the workspace (or its memory/ folder) does not exist
    ├── MemoryFileError            reading or writing a memory file failed (exit code 1)
    ├── SearchIndexError           the search index could not be opened or updated (exit code 1)
    └── ProviderError              the model server could not be reached or failed (exit code 1)

Library code raises these and never prints or exits; the CLI maps them to one line on
stderr and an exit code in one place (`miniclaw.cli.app`). Low-level errors (`OSError`,
`sqlite3.Error`, `httpx.HTTPError`) are converted where they first appear, with
`raise ... from exc`. An error says what it concerns as data too: `path` (a memory file,
relative to the workspace) or `query` (the search text), None when it is about neither, so
a program can act on it without reading the message.
"""

from __future__ import annotations


class MiniclawError(Exception):
    """Base of every error miniclaw raises on purpose."""

    exit_code = 1

    def __init__(self, message: str = "", *, path: str | None = None,
                 query: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.query = query


class UsageError(MiniclawError):
    """Bad input from the caller: a person or a script can fix it by asking differently."""

    exit_code = 2


class QueryError(UsageError):
    """A search query that cannot be searched (empty, too long, no words)."""


class WorkspaceNotFoundError(UsageError):
    """The workspace folder is missing: `miniclaw init` creates it."""


class MemoryFileError(MiniclawError):
    """A memory file could not be read or written; the file is left as it was."""


class SearchIndexError(MiniclawError):
    """The search index (a cache) could not be opened, rebuilt or updated."""


class ProviderError(MiniclawError):
    """The model server (an LLM provider) could not be reached, timed out or answered with an
    error; the message names the server. The chat loop reports it and keeps running."""


class ModelUnavailable(MiniclawError):
    """The embedding model is installed but cannot load or run here (out of memory, a
    library that cannot be mapped, a broken install): a semantic mode then searches by BM25
    and says so (`semantic/retriever.py`), as when the model is not installed. Here, not in
    semantic/model.py, so the ranker catches it without importing the model."""
