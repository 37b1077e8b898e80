"""The progress bar of `memory index` (cli/memory.py): shown on a terminal once work has
run for a second; the embedding bar says how many texts a second."""

from __future__ import annotations

import io

from miniclaw.cli import memory


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _bar(monkeypatch, *reports: tuple[int, int, float], unit: str | None = "texts"):
    """What the bar writes for these (done, total, at seconds) reports, and the bar."""
    terminal = _Terminal()
    monkeypatch.setattr(memory.sys, "stderr", terminal)
    clock = iter([at for _, _, at in reports])
    progress = memory._Progress("Embedding", unit)
    progress._clock = lambda: next(clock)
    progress._start = 0.0
    for done, total, _ in reports:
        progress(done, total)
    progress.close()
    return terminal.getvalue(), progress


def test_the_embedding_bar_says_how_many_texts_a_second(monkeypatch):
    shown, progress = _bar(monkeypatch, (100, 1000, 0.5), (300, 1000, 2.5), (500, 1000, 4.5))
    assert "Embedding" in shown and "100 texts/s" in shown
    assert progress.rate() == 100.0


def test_no_bar_in_the_first_second_nor_a_rate_when_nothing_was_done(monkeypatch):
    shown, progress = _bar(monkeypatch, (5, 5, 0.5))
    assert shown == "" and progress.rate() is None
