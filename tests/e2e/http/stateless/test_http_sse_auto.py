"""The official SDK `mcp>=2` in `mode="auto"` over the legacy HTTP+SSE transport, on both
runtimes: its `server/discover` probe (no MCP-Protocol-Version header) is answered on the
stream with -32022 naming only handshake revisions, so the client falls back to `initialize`
and works in the handshake era. Every server message is validated at teardown.
"""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.client.sse import sse_client

from harness.payloads import outcome

pytestmark = pytest.mark.anyio


async def test_auto_negotiation_over_sse_falls_back_to_the_handshake(http_server):
    srv = http_server("sse-auto", tier="standard")
    async with Client(sse_client(srv.sse_url), mode="auto", cache=None) as client:
        init = client.session.initialize_result
        assert init is not None, "the client fell back to initialize"
        assert init.protocol_version == "2025-11-25", init
        tools = await client.list_tools()
        assert "bernstein_run" in [t.name for t in tools.tools]
        run = outcome(await client.call_tool("bernstein_run", {"goal": "negotiated over SSE"}))
        assert not run.is_error and run.payload["run_id"], run.payload
