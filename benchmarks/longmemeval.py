"""Turn-level retrieval quality of miniclaw memory search on LongMemEval-format data.

The same mapping and metrics as `locomo.py` (see `retrieval.py`): each workspace of the file
is built in a temporary directory through the public API; each session becomes the daily note
of its `date` (read as UTC), each turn one entry `user: text` or `assistant: text`, written
one second after the previous turn. Each question is asked with the store's clock set to its
`question_date`; groups are the question types. Schema: the README.md next to the data file.

Run (from the repo root):
  .venv/bin/python benchmarks/longmemeval.py ../shared/data/longmemeval/longmemeval-dev.json --plain-bm25
  .venv/bin/python benchmarks/longmemeval.py PATH --modes bm25 --speed
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval import Conversation, Question, Session, Turn, main  # noqa: E402


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def load(path: Path) -> list[Conversation]:
    out = []
    for workspace in json.loads(path.read_text(encoding="utf-8")):
        parts = [Session(s["id"], _utc(s["date"]),
                         [Turn(t["id"], f"{t['speaker'].lower()}: {t['text']}")
                          for t in s["turns"]])
                 for s in sorted(workspace["sessions"], key=lambda s: s["date"])]
        known = {t.id for s in parts for t in s.turns}
        questions = [Question(q["q"], _utc(q["question_date"]),
                              frozenset(q["evidence_turns"]) & known, q["type"])
                     for q in workspace["questions"]]
        out.append(Conversation(parts, [q for q in questions if q.evidence]))
    return out


if __name__ == "__main__":
    main(__doc__.splitlines()[0], load)
