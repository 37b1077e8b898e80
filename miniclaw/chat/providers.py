"""What a model provider is to the chat loop, and how one is chosen from the settings.

A provider turns a `ChatRequest` (OpenAI-style messages, the tools it may call, and the
`Context` they were built from) into a stream: pieces of the answer (`str`) as they come,
then the `ToolCall`s the model asked for. It raises `ProviderError`, and nothing else, when
the model cannot answer. Providers are imported only when chosen: `openai` needs httpx,
which `miniclaw memory rank` should never pay for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib import import_module
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from miniclaw.config import LLMSettings
    from miniclaw.context import Context


class ToolCall(NamedTuple):
    """The model asks the loop to run a tool; `arguments` is the JSON text it sent."""

    id: str
    name: str
    arguments: str


class ChatRequest(NamedTuple):
    messages: list[dict]  # {"role": ..., "content": ...}, the system prompt first
    tools: list[dict]  # OpenAI function-tool schemas (chat.tools.offered_tools)
    context: Context  # what the system prompt was rendered from


class Provider(Protocol):
    name: str
    #: True when every answer only quotes what memory holds (the offline `echo`): such an
    #: answer is recorded as a recall, not as something said (`ChatSession.ask`).
    recalls: bool

    def describe(self) -> str:
        """One line for people: which model, where."""

    def stream(self, request: ChatRequest) -> AsyncIterator[str | ToolCall]:
        """The answer in pieces as they come, then the tool calls."""

    async def aclose(self) -> None:
        """Release connections."""


#: The providers, by the "module:Class" path that is imported when one is chosen: they build
#: on this module (`ToolCall`, `ChatRequest`), so it never imports them by name.
PROVIDERS = {"openai": "miniclaw.chat.openai:OpenAIProvider",
             "echo": "miniclaw.chat.echo:EchoProvider"}


def _provider_class(name: str) -> type:
    module, _, cls = PROVIDERS[name].partition(":")
    return getattr(import_module(module), cls)


def make_provider(settings: LLMSettings) -> Provider:
    if settings.provider == "openai":
        return _provider_class("openai")(
            settings.base_url, settings.model, api_key=settings.api_key,
            connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout)
    return _provider_class("echo")()


async def complete(settings: LLMSettings, messages: list[dict]) -> str:
    """One whole answer, without tools, within the settings' deadline (`memory tidy
    --suggest`); ProviderError when the server cannot give it."""
    import asyncio

    from miniclaw.errors import ProviderError

    provider = make_provider(settings)
    pieces: list[str] = []
    try:
        async with asyncio.timeout(settings.deadline):
            async for piece in provider.stream(ChatRequest(messages, [], None)):
                if isinstance(piece, str):
                    pieces.append(piece)
    except TimeoutError:
        raise ProviderError(f"no whole answer within {settings.deadline:g} s (the deadline; "
                            "raise \"deadline\" in config.json)") from None
    finally:
        await provider.aclose()
    return "".join(pieces)
