"""The `echo` provider: answers offline with the memories the context found for the message.

The default when no model server is configured, so that `miniclaw chat` is useful (a
conversational front end to search) and testable with no model at all. It never calls tools.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from miniclaw.chat.providers import ChatRequest, ToolCall

MAX_SHOWN_CHARS = 200
# The best few, as a search shows them (its default limit): the context holds every memory
# that fits its budget (55 on a full workspace), a wall of text as an answer.
MAX_SHOWN = 5


class EchoProvider:
    name = "echo"
    # Its answers only quote memory: the chat records them as a recall (`"recall": true`),
    # which the transcript source leaves out, so that a later search does not find each
    # memory again in every answer that quoted it, and answers quoting answers.
    recalls = True

    def describe(self) -> str:
        return "echo (no model configured: answers with what memory holds)"

    async def stream(self, request: ChatRequest) -> AsyncIterator[str | ToolCall]:
        memories = request.context.items("memories")
        if request.context.corrections:
            from miniclaw.search.results import describe_corrections

            yield f"Searched instead: {describe_corrections(request.context.corrections)}\n"
        if not memories:
            yield "I found nothing in memory about that."
        else:
            noun = "memory" if len(memories) == 1 else "memories"
            best = f"; the {MAX_SHOWN} most relevant" if len(memories) > MAX_SHOWN else ""
            yield f"I found {len(memories)} {noun} about that{best}:"
        for item in memories[:MAX_SHOWN]:
            text = " ".join(item.content.split())
            if len(text) > MAX_SHOWN_CHARS:
                text = text[: MAX_SHOWN_CHARS - 1].rstrip() + "…"
            day = item.date.isoformat() if item.date else "undated"
            yield f"\n- {text} ({item.citation}, {day})"
        if len(memories) > MAX_SHOWN:
            yield f"\n({len(memories) - MAX_SHOWN} more: /context shows them all)"
        if request.context.older:  # what the window hid, said as /search says it
            from miniclaw.chat.loop import CHAT_WORDING
            from miniclaw.search.hints import describe, older

            said = describe(older(request.context.older, request.context.days), CHAT_WORDING)
            yield f"\n({said})"

    async def aclose(self) -> None:
        return None
