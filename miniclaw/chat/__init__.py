"""The assistant chat loop and its model providers.

    loop.py        ChatSession: a turn through memory, context, provider and transcript
    console.py     the terminal around it: reading lines, Ctrl-C/Ctrl-D, the event loop
    providers.py   what a provider is, and choosing one from the settings
    echo.py        the offline provider (the default): answers with the memories found
    openai.py      any OpenAI-compatible chat-completions server, streamed (httpx)
    reply.py       reading what such a server sends, trusting nothing in it (sizes capped)
    tools.py       add_memory and search_memory (memory_tools.py's), the tools a model may call
    transcript.py  sessions/<session-id>.jsonl, appended as the conversation happens

Nothing here is imported by `miniclaw memory ...`; httpx only when `openai` is chosen.
"""
