"""The stdio transport: MCP messages as lines on stdin/stdout, read and written by the event loop.

The SDK's `mcp.server.stdio.stdio_server` reads each line and writes and flushes each reply through a worker
thread (`anyio.wrap_file`): three thread handoffs per request, a third of a bare tool call's server time. When
stdin and stdout are pipes or sockets (how MCP clients start servers) this module serves them with asyncio's
non-blocking pipe transports instead; anything else (a terminal, a file, another event loop) gets the SDK's.
Either way, while serving, fd 0 reads the null device and fd 1 writes to stderr, so a stray `print` or a
child process never writes into the protocol stream; both are restored on exit (the SDK's contract).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

# Longest message line accepted: far beyond any MCP message, but a client cannot make the server buffer an
# endless line. A longer line is reported to the session as unparseable, like any malformed line.
MAX_LINE = 64 * 1024 * 1024


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        return False
    return True


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of `fd` (above the standard range) to serve the wire from; `fd` now points at
    `diversion`."""
    import fcntl  # POSIX only; Windows takes the SDK's transport

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(diversion, fd)
    except OSError:
        os.close(private)
        raise
    finally:
        os.close(diversion)
    return private


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for `Server.run`, like the SDK's `stdio_server()`."""
    claimed = None
    if sys.platform != "win32" and _on_asyncio() and _pipe_or_socket(0) and _pipe_or_socket(1):
        claimed = _claim_both()
    if claimed is None:
        async with stdio_server() as streams:
            yield streams
        return
    stdin_fd, stdout_fd = claimed
    read_transport = write_transport = None
    try:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                         os.fdopen(stdin_fd, "rb", buffering=0, closefd=False))
        write_transport, write_protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
            os.fdopen(stdout_fd, "wb", buffering=0, closefd=False))
        write_transport.set_write_buffer_limits(high=0)  # drain() waits for every byte, as the SDK's flush did
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        async with _session_streams(reader, writer) as streams:
            yield streams
    finally:
        if read_transport is not None:
            read_transport.close()
        if write_transport is not None:
            write_transport.close()
        # Blocking again, as the descriptions were found (the client may share them), then the wire restored.
        for fd, private in ((0, stdin_fd), (1, stdout_fd)):
            with suppress(OSError):
                os.set_blocking(private, True)
            with suppress(OSError):
                os.dup2(private, fd)
            with suppress(OSError):
                os.close(private)


def _claim_both() -> tuple[int, int] | None:
    """Private duplicates of fds 0 and 1, with 0 now reading the null device and 1 writing to stderr; None
    (and nothing changed) when the descriptors cannot be duplicated or diverted."""
    sys.stdout.flush()
    try:
        stdin_fd = _claim(0, os.open(os.devnull, os.O_RDONLY))
    except OSError:
        return None
    try:
        stdout_fd = _claim(1, os.dup(2))
    except OSError:
        os.dup2(stdin_fd, 0)
        os.close(stdin_fd)
        return None
    return stdin_fd, stdout_fd


@asynccontextmanager
async def _session_streams(reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's message streams over one line reader and one writer (as `stdio_server` builds them)."""
    read_stream_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_stream_reader = create_context_streams[SessionMessage](0)

    async def stdin_reader() -> None:
        async with read_stream_writer:
            while True:
                try:
                    line = await reader.readline()
                except ValueError as exc:  # longer than MAX_LINE; its remainder arrives as one more bad line
                    await read_stream_writer.send(exc)
                    continue
                if not line:
                    return
                try:  # decoded as the SDK does: bytes that are not UTF-8 become U+FFFD
                    message = types.jsonrpc_message_adapter.validate_json(line.decode(errors="replace"),
                                                                          by_name=False)
                except Exception as exc:
                    await read_stream_writer.send(exc)
                    continue
                await read_stream_writer.send(SessionMessage(message))

    async def stdout_writer() -> None:
        async with write_stream_reader:
            async for session_message in write_stream_reader:
                writer.write(session_message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                             + b"\n")
                await writer.drain()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdin_reader)
        tg.start_soon(stdout_writer)
        yield read_stream, write_stream
