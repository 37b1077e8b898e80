"""The `echo` provider: answers offline with the memories the context found for the message.

The default when no model server is configured, so that `miniclaw chat` is useful (a
conversational front end to search) and testable with no model at all. It never calls tools.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from miniclaw.chat.providers import ChatRequest, ToolCall

MAX_SHOWN_CHARS = 200


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
            from miniclaw.memory.results import describe_corrections

            yield f"Searched instead: {describe_corrections(request.context.corrections)}\n"
        if not memories:
            yield "I found nothing in memory about that."
            return
        noun = "memory" if len(memories) == 1 else "memories"
        yield f"I found {len(memories)} {noun} about that:"
        for item in memories:
            text = " ".join(item.content.split())
            if len(text) > MAX_SHOWN_CHARS:
                text = text[: MAX_SHOWN_CHARS - 1].rstrip() + "…"
            day = item.date.isoformat() if item.date else "undated"
            yield f"\n- {text} ({item.citation}, {day})"

    async def aclose(self) -> None:
        return None
