"""The Foundation scenarios through `mcp>=2` over streamable HTTP, on both runtimes:
`Client(url, mode="auto")` must discover the server and adopt 2026-07-28 (no `initialize`
on the wire). Every server message is recorded by the proxy and validated against the
2026-07-28 schema at teardown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import scenarios
from harness.payloads import check_meter, outcome
from harness.sdk_http import capability_resource_http, stateless

pytestmark = pytest.mark.anyio

METER_OFF = {"BERNSTEIN_MCP_COST_METER": "0"}
MODERN = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"


def client_requests(prefix: Path) -> list[dict]:
    out = []
    for line in Path(str(prefix) + ".client.jsonl").read_bytes().splitlines():
        msg = json.loads(line)
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            out.append(msg)
    return out


async def test_auto_mode_adopts_the_stateless_era(http_server):
    srv = http_server("discover", tier="all")
    async with stateless(srv) as client:
        assert client.protocol_version == MODERN
        names = set(await scenarios.tool_names(client))
    assert {"bernstein_run", "bernstein_run_status"} <= names
    methods = [r["method"] for r in client_requests(srv.prefix)]
    assert methods[0] == "server/discover", methods
    assert "initialize" not in methods, "mode=auto fell back to the handshake"


@pytest.mark.parametrize("tier", ["core", "standard", "all"])
async def test_tools_per_tier(http_server, tier):
    srv = http_server(f"tier-{tier}", tier=tier)
    async with stateless(srv) as client:
        names = await scenarios.tool_names(client)
    assert {"bernstein_run", "bernstein_status", "bernstein_run_status"} <= set(names)
    assert ("bernstein_cancel" in names) == (tier != "core")


async def test_run_poll_cancel(http_server):
    srv = http_server("lifecycle", env=METER_OFF)
    async with stateless(srv) as client:
        await scenarios.run_poll_cancel(client)


async def test_bad_arguments_are_refused(http_server):
    srv = http_server("bad-args", env=METER_OFF)
    async with stateless(srv) as client:
        await scenarios.bad_arguments_are_refused(client)
        await scenarios.protocol_error(client.call_tool("bernstein_no_such_tool", {}))


async def test_prompts(http_server):
    srv = http_server("prompts", tier="all")
    async with stateless(srv) as client:
        registered = set(await scenarios.tool_names(client))
        await scenarios.prompts_render(client, registered)


async def test_capability_card_resource(http_server):
    srv = http_server("card", tier="all")
    async with stateless(srv) as client:
        await capability_resource_http(client, "all")


async def test_meter_envelope(http_server):
    srv = http_server("meter")
    async with stateless(srv) as client:
        status = outcome(await client.call_tool("bernstein_status", {}))
        check_meter(status.meter, "bernstein_status", ok=True)
