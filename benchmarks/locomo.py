"""Turn-level retrieval quality of miniclaw memory search on LoCoMo-format data.

For each conversation, a fresh workspace is built in a temporary directory through the public
API only: each session becomes the daily note of its `session_N_date_time` (read as UTC), each
turn one entry `Speaker: text` (plus ` [shares a photo: CAPTION]` when the turn has a
`blip_caption`), written one second after the previous turn. Every question with evidence is
then asked with `search_memories(question, limit=10, days=None, mode=mode)` (the store's clock
set to a day after the last session: LoCoMo gives no question dates), and each result is
mapped back to the dialogue turns (dia_ids) whose lines it overlaps. Metrics: see
`retrieval.py`; groups are LoCoMo's categories 1..5. Evidence ids that match no turn are
dropped; questions left with no evidence are skipped.

Run (from the repo root):
  .venv/bin/python benchmarks/locomo.py ../shared/data/locomo/locomo-dev.json --plain-bm25
  .venv/bin/python benchmarks/locomo.py PATH --limit-conversations 1 --json
  nice .venv/bin/python benchmarks/locomo.py PATH --modes bm25,hybrid --vector-cache /tmp/vectors.sqlite3 [--fusion-weight 0.5]
  .venv/bin/python benchmarks/locomo.py PATH --modes bm25 --ablations [--no-stemming]
"""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta, timezone
from pathlib import Path

from dateutil import parser as dateparser

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval import Conversation, Question, Session, Turn, main  # noqa: E402


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def sessions(conversation: dict) -> list[Session]:
    """Each non-empty session, in session order, dated in UTC."""
    numbers = sorted(int(m.group(1)) for key in conversation
                     if (m := re.fullmatch(r"session_(\d+)", key)))
    out = []
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if turns:
            when = dateparser.parse(conversation[f"session_{n}_date_time"])
            out.append(Session(f"session_{n}", when.replace(tzinfo=timezone.utc),
                               [Turn(t["dia_id"], turn_text(t)) for t in turns]))
    return out


def load(path: Path) -> list[Conversation]:
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        parts = sessions(sample["conversation"])
        known = {t.id for s in parts for t in s.turns}
        asked = max(s.when for s in parts) + timedelta(days=1)
        questions = []
        for qa in sample["qa"]:
            evidence = frozenset(e.strip() for e in qa.get("evidence") or []) & known
            if evidence:
                questions.append(Question(qa["question"], asked, evidence, str(qa["category"])))
        out.append(Conversation(parts, questions))
    return out


if __name__ == "__main__":
    main(__doc__.splitlines()[0], load)
