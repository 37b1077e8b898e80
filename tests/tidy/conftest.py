"""A workspace with planted duplicates and a changed fact, as a person's notes hold them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write

MEMORY = """# Memory

## 2026-11-05
- Sam's rent is 1200 dollars a month (added at 2026-11-05T09:00:00Z)
<!-- @tag: home -->
- Prefers dark roast coffee (added at 2026-11-05T10:00:00Z)
<!-- @category: preference -->
"""

EARLY = """# Daily Note - 2026-11-02

## 08:00:00 UTC

prefers dark roast coffee
<!-- @tag: coffee -->

---

## 09:00:00 UTC

Met Alex at the climbing gym on Pine Street

---

## 10:00:00 UTC

The dentist appointment is on Thursday at the clinic near the station
"""

LATE = """# Daily Note - 2026-11-20

## 08:00:00 UTC

Sam's rent is 1350 dollars a month

---

## 09:00:00 UTC

Prefers dark roast coffee.
<!-- @category: food -->

---

## 10:00:00 UTC

Met Alex at the climbing gym on Pine Street!
<!-- @tag: friends -->
"""

SECRET = """---
private: true
---
# Daily Note - 2026-11-21

## 08:00:00 UTC

prefers dark roast coffee
"""


@pytest.fixture
def planted(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md", MEMORY)
    write(workspace, "memory/2026-11-02.md", EARLY)
    write(workspace, "memory/2026-11-20.md", LATE)
    write(workspace, "memory/2026-11-21.md", SECRET)
    return workspace
