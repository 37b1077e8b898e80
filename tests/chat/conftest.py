"""Chat tests: no model settings leak in from the environment, and helpers to read what a
session wrote."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_model_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MINICLAW_LLM_BASE_URL", "MINICLAW_LLM_MODEL", "MINICLAW_LLM_API_KEY",
                 "MINICLAW_LLM_PROVIDER", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def transcript_records(workspace: Path) -> list[dict]:
    """Every record of the workspace's transcripts; each line must be one JSON object."""
    records = []
    for path in sorted((workspace / "sessions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            records.append(json.loads(line))
    return records
