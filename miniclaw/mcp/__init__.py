"""The MCP server for coding agents (`miniclaw mcp`) and its wire format."""
