"""The 2026-07-28 stateless era through the official SDK `mcp>=2`: `Client(mode="auto")`
over stdio must discover the server and adopt 2026-07-28 (no `initialize` on the wire), then
list tools per tier, run -> run_status -> cancel, render prompts, read the capability card and
refuse bad arguments. Every message is validated against the 2026-07-28 schema at teardown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import scenarios
from harness.payloads import check_meter, outcome
from harness.sdk_stateless import connect

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


async def test_auto_mode_adopts_the_stateless_era(launcher):
    async with connect(launcher, "discover", tier="all") as client:
        assert client.protocol_version == MODERN
        assert client.server_info is not None and client.server_info.name
        instructions = client.instructions
        names = set(await scenarios.tool_names(client))
    assert instructions and len(instructions) <= 900
    named = set(re.findall(r"\bbernstein_[a-z_]+\b", instructions))
    assert {"bernstein_run", "bernstein_run_status"} <= named <= names
    requests = client_requests(launcher.prefixes[-1])
    methods = [r["method"] for r in requests]
    assert methods[0] == "server/discover", methods
    assert "initialize" not in methods, "mode=auto fell back to the handshake"
    for r in requests:
        assert r["params"]["_meta"][VERSION_META] == MODERN, r


@pytest.mark.parametrize("tier", ["core", "standard", "all"])
async def test_tiers(launcher, tier):
    async with connect(launcher, f"tier-{tier}", tier=tier) as client:
        names = await scenarios.tool_names(client)
    assert len(names) == len(set(names))
    assert {"bernstein_run", "bernstein_status", "bernstein_run_status"} <= set(names)
    assert ("bernstein_cancel" in names) == (tier != "core")


async def test_run_poll_cancel(launcher):
    async with connect(launcher, "lifecycle", env=METER_OFF) as client:
        await scenarios.run_poll_cancel(client)


async def test_subtask_tree_cancel(launcher):
    async with connect(launcher, "tree", env=METER_OFF) as client:
        await scenarios.subtask_tree_cancel(client)


async def test_bad_arguments_are_refused(launcher):
    async with connect(launcher, "bad-args", env=METER_OFF) as client:
        await scenarios.bad_arguments_are_refused(client)
        await scenarios.protocol_error(client.call_tool("bernstein_no_such_tool", {}))


async def test_prompts(launcher):
    async with connect(launcher, "prompts", tier="all") as client:
        registered = set(await scenarios.tool_names(client))
        await scenarios.prompts_render(client, registered)


@pytest.mark.parametrize("tier", ["core", "all"])
async def test_capability_card_resource(launcher, tier):
    async with connect(launcher, f"card-{tier}", tier=tier) as client:
        await scenarios.capability_resource(client, tier)


async def test_meter_envelope(launcher):
    async with connect(launcher, "meter-on") as client:
        status = outcome(await client.call_tool("bernstein_status", {}))
        check_meter(status.meter, "bernstein_status", ok=True)
    async with connect(launcher, "meter-off", env=METER_OFF) as client:
        bare = outcome(await client.call_tool("bernstein_status", {}))
        assert bare.meter is None and "counts" in bare.document


async def test_both_eras_share_one_ledger(launcher):
    """A run started in the stateless era is polled byte-identically by a second process."""
    async with connect(launcher, "writer", env=METER_OFF) as client:
        run = await scenarios.ok(client, "bernstein_run", {"goal": "one ledger, two processes"})
        first = await scenarios.tool(client, "bernstein_run_status", {"run_id": run["run_id"]})
    async with connect(launcher, "reader", env=METER_OFF) as client:
        second = await scenarios.tool(client, "bernstein_run_status", {"run_id": run["run_id"]})
    assert first.text == second.text
