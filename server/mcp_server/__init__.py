"""The MCP adapter: one tool per catalogue endpoint, resources, prompts, and the stdio / SSE / streamable
HTTP transports. Every call goes through `server.dispatch.Dispatcher.invoke`, exactly like REST; nothing
here knows what an endpoint does.
"""
