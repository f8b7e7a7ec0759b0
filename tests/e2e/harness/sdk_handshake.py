"""The official Python SDK, major 1 (`mcp<2`), connected to a recorded server over stdio.

Only the handshake era: `stdio_client` + `ClientSession.initialize()`. Imported by the tests
under handshake/ only, which are collected only when the venv holds `mcp<2`.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.stdio import stdio_client

from .launch import Launcher


@asynccontextmanager
async def connect(
    launcher: Launcher,
    label: str = "sdk1",
    logging_callback=None,
    message_handler=None,
    elicitation_callback=None,
    **kw,
):
    """Yields (session, InitializeResult) for a fresh recorded server; `logging_callback`
    receives the `notifications/message` params the server sends, `message_handler` every
    other notification (and request) the session does not answer itself, and
    `elicitation_callback` (when given, the session declares elicitation) answers the
    server's `elicitation/create`."""
    params = launcher.stdio_params(label, **kw)
    with launcher.sdk_errlog(label) as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(
                read,
                write,
                logging_callback=logging_callback,
                message_handler=message_handler,
                elicitation_callback=elicitation_callback,
            ) as session:
                init = await session.initialize()
                yield session, init
