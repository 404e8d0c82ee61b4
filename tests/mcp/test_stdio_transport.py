"""server/mcp_server/stdio.py on real pipes: stdout carries only protocol even when a handler or a child process
writes to file descriptor 1, malformed lines are answered without ending the connection, and the server ends
when stdin closes."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.mcp.support import ROOT

SERVER = """
import os, subprocess, sys
import anyio, mcp_types as types
from mcp.server import Server
from server.mcp_server.stdio import stdio_streams

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="noisy", input_schema={"type": "object"})])

async def call_tool(ctx, params):
    if params.name == "big":  # larger than a pipe's buffer: written in several turns of the loop
        return types.CallToolResult(content=[types.TextContent(text="x" * 300_000)])
    print("stray print")
    sys.stdout.flush()
    os.write(1, b"stray write\\n")
    subprocess.run([sys.executable, "-c", "print('stray child')"], check=True)
    return types.CallToolResult(content=[types.TextContent(text="done \u00e9")])

async def main():
    server = Server("noisy", version="0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_streams() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    print("after", flush=True)  # fd 1 is the wire again once the transport is done

anyio.run(main)
"""

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_stdout_carries_only_protocol_and_stdin_eof_ends_the_server() -> None:
    messages = [json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                "this is not json",
                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "noisy"}}) + "\r",
                json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
                json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "big"}})]
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n".join(messages) + "\n")
        proc.stdin.flush()
        replies = {}
        while len(replies) < 4:  # stdin stays open until every request is answered
            line = proc.stdout.readline()
            assert line, "server closed stdout early"
            reply = json.loads(line)  # every line is a JSON-RPC message
            replies[reply["id"]] = reply
        rest, stderr = proc.communicate(timeout=60)  # closes stdin: the server ends
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert rest == "after\n"  # fd 1 is the wire again once the transport is done
    assert replies[2]["result"]["content"][0]["text"] == "done \u00e9"
    assert replies[3]["result"]["tools"][0]["name"] == "noisy"
    assert replies[4]["result"]["content"][0]["text"] == "x" * 300_000
    for stray in ("stray print", "stray write", "stray child"):
        assert stray in stderr
