"""Turn-level retrieval quality of miniclaw memory search on LongMemEval-format data.

The same mapping and metrics as `locomo.py` (see `retrieval.py`): each workspace of the file
is built in a temporary directory through the public API; each session becomes the daily note
of its `date` (read as UTC), each turn one entry `user: text` or `assistant: text`, written
one second after the previous turn. Each question is asked with the store's clock set to its
`question_date`; groups are the question types. Schema: the README.md next to the data file.

`--as transcripts` writes each session as a miniclaw chat transcript instead
(`sessions/<id>.jsonl`, one record per turn), `--as claude-code` as a Claude Code one
(`projects/<project>/<id>.jsonl`, text blocks): only that transcript source is searched,
with its filters (short and acknowledgement messages are left out, as in real use).

Run (from the repo root):
  .venv/bin/python benchmarks/longmemeval.py ../shared/data/longmemeval/longmemeval-dev.json --plain-bm25
  nice .venv/bin/python benchmarks/longmemeval.py PATH --modes bm25,hybrid --vector-cache /tmp/vectors.sqlite3 [--fusion-weight 0.5]
  .venv/bin/python benchmarks/longmemeval.py PATH --modes bm25 --speed
  .venv/bin/python benchmarks/longmemeval.py PATH --modes bm25 --as transcripts
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
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


def _role_and_text(turn: Turn) -> tuple[str, str]:
    speaker, _, text = turn.text.partition(": ")
    return speaker, text


class MiniclawTranscripts:
    """Each session `sessions/<id>.jsonl` as the chat writes it (chat/transcript.py)."""

    def sources(self, tmp: Path):
        from miniclaw.sources.transcripts import TranscriptSource

        return (TranscriptSource(),), ()

    def path(self, tmp: Path, session: Session) -> tuple[Path, str]:
        name = f"{session.id}.jsonl"
        return tmp / "workspace" / "sessions" / name, f"sessions/{name}"

    def record(self, session: Session, role: str, text: str, at: str) -> dict:
        return {"role": role, "content": text, "timestamp": at, "session_id": session.id}

    async def write(self, store, conversation: Conversation, tmp: Path) -> dict[str, list]:
        spans: dict[str, list] = {}
        for session in conversation.sessions:
            path, shown = self.path(tmp, session)
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = []
            for i, turn in enumerate(session.turns):
                role, text = _role_and_text(turn)
                at = (session.when + timedelta(seconds=i)).isoformat(timespec="milliseconds")
                lines.append(json.dumps(self.record(session, role, text, at.replace("+00:00", "Z")),
                                        ensure_ascii=False))
                spans.setdefault(shown, []).append((i + 1, i + 1, turn.id))
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return spans


class ClaudeCodeTranscripts(MiniclawTranscripts):
    """Each session `projects/-bench/<id>.jsonl` as Claude Code writes it."""

    def sources(self, tmp: Path):
        from miniclaw.sources.claude_code import ClaudeCodeSource

        root = str(tmp / "claude" / "projects")
        return (ClaudeCodeSource(root=root),), (root,)

    def path(self, tmp: Path, session: Session) -> tuple[Path, str]:
        path = tmp / "claude" / "projects" / "-bench" / f"{session.id}.jsonl"
        return path, f"{tmp / 'claude' / 'projects'}/-bench/{session.id}.jsonl"

    def record(self, session: Session, role: str, text: str, at: str) -> dict:
        content = text if role == "user" else [{"type": "text", "text": text}]
        return {"parentUuid": None, "isSidechain": False, "userType": "external",
                "cwd": "/home/bench", "sessionId": session.id, "type": role,
                "message": {"role": role, "content": content}, "timestamp": at}


if __name__ == "__main__":
    main(__doc__.splitlines()[0], load,
         {"transcripts": MiniclawTranscripts(), "claude-code": ClaudeCodeTranscripts()})
