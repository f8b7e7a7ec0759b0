"""Runs, cancel, status, prompts, the capability card, bad arguments and the meter through the
official SDK `mcp<2` (handshake era, `ClientSession` over `stdio_client`).

The scenarios themselves live in harness/scenarios.py and run in the stateless era too.
"""

from __future__ import annotations

import json

import pytest

from harness import scenarios
from harness.payloads import check_meter, find_values, outcome
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio

METER_OFF = {"BERNSTEIN_MCP_COST_METER": "0"}


async def test_run_poll_cancel(launcher):
    async with connect(launcher, "lifecycle", env=METER_OFF) as (session, _):
        await scenarios.run_poll_cancel(session)


async def test_subtask_tree_cancel(launcher):
    async with connect(launcher, "tree", env=METER_OFF) as (session, _):
        await scenarios.subtask_tree_cancel(session)


async def test_state_survives_reconnect(launcher):
    async with connect(launcher, "writer", env=METER_OFF) as (session, _):
        run = await scenarios.ok(session, "bernstein_run", {"goal": "outlive the process"})
        handle = await scenarios.tool(session, "bernstein_run_status", {"run_id": run["run_id"]})
    async with connect(launcher, "reader", env=METER_OFF) as (session, _):
        again = await scenarios.tool(session, "bernstein_run_status", {"run_id": run["run_id"]})
        status = await scenarios.ok(session, "bernstein_status")
    assert again.text == handle.text, "another process must answer the same poll byte-identically"
    assert status["counts"]["total"] == 1


async def test_bad_arguments_are_refused(launcher):
    async with connect(launcher, "bad-args", env=METER_OFF) as (session, _):
        await scenarios.bad_arguments_are_refused(session)


async def test_prompts(launcher):
    async with connect(launcher, "prompts", tier="all") as (session, _):
        registered = set(await scenarios.tool_names(session))
        await scenarios.prompts_render(session, registered)


@pytest.mark.parametrize("tier", ["core", "standard", "all"])
async def test_capability_card_resource(launcher, tier):
    async with connect(launcher, f"card-{tier}", tier=tier) as (session, init):
        card = await scenarios.capability_resource(session, tier)
    in_init = find_values(scenarios.dump(init), "capabilityCard")
    assert in_init, "initialize must carry capabilityCard"
    assert in_init[0] == card, "the card in initialize and the resource must agree"


async def test_capability_card_reflects_meter_state(launcher):
    async with connect(launcher, "card-meter-on") as (session, _):
        on = await scenarios.read_card(session)
    async with connect(launcher, "card-meter-off", env=METER_OFF) as (session, _):
        off = await scenarios.read_card(session)
    assert on != off, "the capability card must show the cost-meter state"


async def test_meter_envelope_on_and_off(launcher):
    async with connect(launcher, "meter-on") as (session, _):
        status = outcome(await session.call_tool("bernstein_status", {}))
        assert status.meter is not None, f"default results must be enveloped: {status.text[:300]}"
        check_meter(status.meter, "bernstein_status", ok=True)
        run = outcome(await session.call_tool("bernstein_run", {"goal": "metered run"}))
        check_meter(run.meter, "bernstein_run", ok=True)
        bad = outcome(await session.call_tool("bernstein_run_status", {"run_id": "R-unknown"}))
        assert bad.is_error
        if bad.meter is not None:
            check_meter(bad.meter, "bernstein_run_status", ok=False)
        assert {"error", "message", "hint"} <= set(bad.payload), bad.payload
    async with connect(launcher, "meter-off", env=METER_OFF) as (session, _):
        bare = outcome(await session.call_tool("bernstein_status", {}))
        assert bare.meter is None and "_meter" not in bare.text, bare.text[:300]
        assert "counts" in bare.document
        bad = outcome(await session.call_tool("bernstein_run_status", {"run_id": "R-unknown"}))
        assert bad.is_error and "_meter" not in bad.text
    # Same ledger, one run later: the bare payload has the same shape as the enveloped one.
    assert set(bare.payload) == set(status.payload)
    assert bare.payload["counts"]["total"] == status.payload["counts"]["total"] + 1


async def test_outputs_are_json_text(launcher):
    async with connect(launcher, "json-text", env=METER_OFF) as (session, _):
        result = await session.call_tool("bernstein_status", {})
        dumped = scenarios.dump(result)
        text = dumped["content"][0]["text"]
        assert json.loads(text) == outcome(result).document
        if "structuredContent" in dumped:
            assert dumped["structuredContent"] == json.loads(text)
