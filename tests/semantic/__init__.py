"""Tests of the semantic floor. `needs_model` marks those that run the bundled model: they
skip, saying why, where the semantic extra is not installed (CI installs `.[dev]` only)."""

import pytest

from miniclaw.semantic import model as _embedding

_READY, _WHY = _embedding.available()
needs_model = pytest.mark.skipif(not _READY, reason=_WHY or "embedding model not installed")
