"""The stdio transport: the MCP SDK's own (`mcp.server.stdio.stdio_server`). While it serves, fd 0 reads the null
device and fd 1 writes to stderr, so a stray `print` or a child process never writes into the protocol stream;
both are restored on exit (the SDK's contract, tests/mcp/test_stdio_transport.py).

socialpub once served the pipes with asyncio's non-blocking pipe transports on duplicated descriptors, which
spared the SDK's worker-thread reads and writes (three thread handoffs per request) but needed the SDK's private
stream module; the SDK's transport is the supported one (docs/decisions.md, "Public APIs only")."""

from __future__ import annotations

from mcp.server.stdio import stdio_server as stdio_streams

__all__ = ["stdio_streams"]
