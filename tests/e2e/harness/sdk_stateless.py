"""The official Python SDK, major 2 (`mcp>=2`), connected to a recorded server over stdio.

`mcp.Client(StdioServerParameters, mode="auto")` probes `server/discover` and adopts the
2026-07-28 stateless era when the server offers it (falling back to `initialize` otherwise;
the tests assert that it did not). The client-side response cache is off so every call
reaches the server and lands in the transcript. Imported by the tests under stateless/ only.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from mcp import Client
from mcp.client.stdio import stdio_client

from .launch import Launcher


@asynccontextmanager
async def connect(launcher: Launcher, label: str = "sdk2", mode: str = "auto", client_kw=None, **kw):
    """Yields a connected `mcp.Client` for a fresh recorded server (`client_kw`: more
    arguments of `Client`, e.g. `log_level` and `logging_callback`)."""
    params = launcher.stdio_params(label, **kw)
    with launcher.sdk_errlog(label) as errlog:
        # The same transport `Client(params)` builds, with the proxy's stderr sent to a file.
        client = Client(stdio_client(params, errlog=errlog), mode=mode, cache=None, **(client_kw or {}))
        async with client:
            yield client
