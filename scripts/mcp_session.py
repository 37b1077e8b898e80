"""A session with `miniclaw mcp` as an agent has it: the MCP SDK's stdio client starts the
server on a workspace, lists the tools and calls a few (the README's session is its output).

Run: .venv/bin/python scripts/mcp_session.py WORKSPACE   (after `pip install -e '.[mcp]'`)
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client

CALLS = [("search_memory", {"query": "atlas bugdet", "limit": 1}),
         ("add_memory", {"content": "Atlas launch moved to March", "kind": "long_term",
                         "tags": ["atlas"]}),
         ("search_memory", {"query": "atlas launch", "limit": 1}),
         ("search_memory", {"query": "insurance"}),
         ("search_memory", {"query": 42})]


async def main(workspace: str) -> None:
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "miniclaw", "--workspace", workspace, "mcp"])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        print(f"server: {init.server_info.name} {init.server_info.version}")
        print("tools:", ", ".join(t.name for t in (await session.list_tools()).tools))
        for name, args in CALLS:
            result = await session.call_tool(name, args)
            print(f"> {name} {json.dumps(args)}")
            print(result.content[0].text)  # the structured content, as JSON text
        print("resources:", ", ".join(r.uri for r in (await session.list_resources()).resources))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
