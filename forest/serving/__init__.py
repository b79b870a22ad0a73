"""The faces' plumbing: MCP/REST/OpenAI over HTTP, tool definitions, the ingest queue."""
