"""Adapters and processes: dispatch, REST app, MCP server, publishing worker, CLI."""
