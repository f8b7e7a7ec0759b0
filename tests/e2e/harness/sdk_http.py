"""The official Python SDK over HTTP, either major, connected through the recording proxy of a
running `HttpServer` (harness/http_server.py).

* `mcp<2`: `streamablehttp_client(url)` + `ClientSession`, or the legacy `sse_client(url)`.
* `mcp>=2`: `Client(url, mode="auto")` (streamable HTTP; must adopt 2026-07-28).

Imports are local so this module loads in either venv.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

from .http_server import HttpServer
from .scenarios import dump, find_values, mentions, protocol_error
from .scenarios import read_card as _read_card

CAPABILITY_URI = "bernstein://capability"


@asynccontextmanager
async def handshake_streamable(server: HttpServer, headers: dict[str, str] | None = None):
    """Yields (session, InitializeResult): `mcp<2` over streamable HTTP."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(server.mcp_url, headers=headers) as (read, write, _sid):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            yield session, init


@asynccontextmanager
async def handshake_sse(server: HttpServer, headers: dict[str, str] | None = None, message_handler=None):
    """Yields (session, InitializeResult): `mcp<2` over the legacy HTTP+SSE transport
    (`message_handler`: the notifications the session does not handle itself)."""
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async with sse_client(server.sse_url, headers=headers) as (read, write):
        async with ClientSession(read, write, message_handler=message_handler) as session:
            init = await session.initialize()
            yield session, init


@asynccontextmanager
async def stateless(server: HttpServer, mode: str = "auto"):
    """Yields a connected `mcp>=2` `Client` over streamable HTTP (response cache off)."""
    from mcp import Client

    client = Client(server.mcp_url, mode=mode, cache=None)
    async with client:
        yield client


async def capability_resource_http(client, tier: str) -> dict:
    """The capability card over HTTP: listed, readable, names the tier and the HTTP transports."""
    listing = dump(await client.list_resources())
    assert CAPABILITY_URI in [r["uri"] for r in listing["resources"]], listing
    card = await _read_card(client)
    assert mentions(card, tier), f"card does not give the active tier {tier!r}: {card}"
    assert mentions(card, "streamable-http"), f"the card must list the HTTP transport: {json.dumps(card)[:500]}"
    assert find_values(card, "tiers") or mentions(card, "standard"), card
    await protocol_error(client.read_resource("bernstein://no-such-resource"))
    return card
