"""Where the other agents' memory stores used as test fixtures live (tests/fixtures/formats:
written for miniclaw from ../shared/formats/FORMATS.md; `expected/` made by the tools)."""

from pathlib import Path

FORMAT_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"
