"""The Foundation scenarios through `mcp<2` over HTTP, on both runtimes: streamable HTTP
(`streamablehttp_client` + `ClientSession`) and the legacy HTTP+SSE transport (`sse_client`).
Every server message (JSON bodies and SSE events) is recorded by the proxy and validated
against the official schema at teardown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import scenarios
from harness.payloads import check_meter, find_values, outcome
from harness.sdk_http import capability_resource_http, handshake_sse, handshake_streamable

pytestmark = pytest.mark.anyio

METER_OFF = {"BERNSTEIN_MCP_COST_METER": "0"}
TRANSPORTS = {"streamable": handshake_streamable, "sse": handshake_sse}


@pytest.fixture(params=sorted(TRANSPORTS))
def connect(request):
    return TRANSPORTS[request.param]


@pytest.mark.parametrize("tier", ["core", "standard", "all"])
async def test_tools_per_tier(http_server, connect, tier):
    srv = http_server(f"tier-{tier}", tier=tier)
    async with connect(srv) as (session, init):
        assert init.protocolVersion in ("2025-11-25", "2025-06-18", "2025-03-26"), init.protocolVersion
        names = await scenarios.tool_names(session)
    srv.stop()
    recorded = Path(str(srv.prefix) + ".server.jsonl").read_bytes().splitlines()
    assert len(recorded) >= 2, "the proxy must record the server's messages (initialize, tools/list)"
    assert len(names) == len(set(names))
    assert {"bernstein_run", "bernstein_status", "bernstein_run_status"} <= set(names)
    assert ("bernstein_cancel" in names) == (tier != "core")


async def test_run_poll_cancel(http_server, connect):
    srv = http_server("lifecycle", env=METER_OFF)
    async with connect(srv) as (session, _):
        await scenarios.run_poll_cancel(session)


async def test_bad_arguments_are_refused(http_server, connect):
    srv = http_server("bad-args", env=METER_OFF)
    async with connect(srv) as (session, _):
        await scenarios.bad_arguments_are_refused(session)


async def test_prompts(http_server, connect):
    srv = http_server("prompts", tier="all")
    async with connect(srv) as (session, _):
        registered = set(await scenarios.tool_names(session))
        await scenarios.prompts_render(session, registered)


async def test_capability_card_resource(http_server, connect):
    srv = http_server("card", tier="standard")
    async with connect(srv) as (session, init):
        card = await capability_resource_http(session, "standard")
    in_init = find_values(scenarios.dump(init), "capabilityCard")
    assert in_init and in_init[0] == card, "the card in initialize and the resource must agree"


async def test_meter_envelope(http_server, connect):
    srv = http_server("meter")
    async with connect(srv) as (session, _):
        status = outcome(await session.call_tool("bernstein_status", {}))
        check_meter(status.meter, "bernstein_status", ok=True)
