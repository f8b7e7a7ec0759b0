"""Tool tiers through the official SDK `mcp<2`: what each tier lists (by `--mcp-tier` and by
`BERNSTEIN_MCP_TOOL_TIER`), precedence, deterministic order, the advertised input schemas,
tools outside the tier, unknown tools, and the connect-time instructions.
"""

from __future__ import annotations

import re

import jsonschema
import pytest
from mcp.shared.exceptions import McpError
from mcp.types import LATEST_PROTOCOL_VERSION

from harness.payloads import outcome
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio

TIERS = ["core", "standard", "all"]
CORE_TOOLS = {"bernstein_run", "bernstein_status", "bernstein_run_status"}


async def listed(launcher, label: str, **kw) -> list[str]:
    async with connect(launcher, label, **kw) as (session, _init):
        return [t.name for t in (await session.list_tools()).tools]


@pytest.mark.parametrize("via", ["flag", "env"])
async def test_each_tier_lists_its_tools(launcher, via):
    lists = {}
    for tier in TIERS:
        kw = {"tier": tier} if via == "flag" else {"env": {"BERNSTEIN_MCP_TOOL_TIER": tier}}
        lists[tier] = await listed(launcher, f"{via}-{tier}", **kw)
    for tier, names in lists.items():
        assert len(names) == len(set(names)), f"{tier} lists a tool twice: {names}"
    core, standard, every = (set(lists[t]) for t in TIERS)
    assert CORE_TOOLS <= core
    assert "bernstein_cancel" not in core
    assert core < standard, "standard must add tools to core (bernstein_cancel at least)"
    assert "bernstein_cancel" in standard
    assert standard <= every


async def test_default_tier_is_standard_and_flag_beats_env(launcher):
    default = await listed(launcher, "default")
    standard = await listed(launcher, "standard", tier="standard")
    assert default == standard
    flag_core_env_all = await listed(launcher, "flag-over-env", tier="core", env={"BERNSTEIN_MCP_TOOL_TIER": "all"})
    core = await listed(launcher, "core", tier="core")
    assert flag_core_env_all == core


async def test_listing_order_is_deterministic(launcher):
    async with connect(launcher, "order-a", tier="all") as (session, _):
        first = [t.model_dump(mode="json") for t in (await session.list_tools()).tools]
        second = [t.model_dump(mode="json") for t in (await session.list_tools()).tools]
    async with connect(launcher, "order-b", tier="all") as (session, _):
        third = [t.model_dump(mode="json") for t in (await session.list_tools()).tools]
    assert first == second == third


async def test_advertised_input_schemas(launcher):
    async with connect(launcher, "schemas", tier="all") as (session, _):
        tools = {t.name: t for t in (await session.list_tools()).tools}
    for name, tool in tools.items():
        schema = tool.inputSchema
        assert schema.get("type") == "object", f"{name}: {schema}"
        jsonschema.validators.validator_for(schema).check_schema(schema)
        assert tool.description, f"{name} has no description"
    run = tools["bernstein_run"].inputSchema
    assert "goal" in run.get("required", []), run
    goal = run["properties"]["goal"]
    assert goal.get("minLength") == 1 and goal.get("maxLength") == 8192, goal
    for field in ("role", "priority", "scope", "complexity", "estimated_minutes", "parent_task_id"):
        assert field in run["properties"], f"bernstein_run does not advertise {field}"
    assert "run_id" in tools["bernstein_run_status"].inputSchema.get("required", [])
    assert "task_id" in tools["bernstein_cancel"].inputSchema.get("required", [])


async def call_is_refused(session, name: str, arguments: dict) -> None:
    """A refused call: a JSON-RPC error, or a structured isError result."""
    try:
        result = await session.call_tool(name, arguments)
    except McpError as e:
        assert e.error.message, e
        return
    o = outcome(result)
    assert o.is_error, f"{name} {arguments} was not refused: {o.text[:300]}"
    assert {"error", "message", "hint"} <= set(o.payload), o.payload


async def test_tool_outside_the_tier_is_not_callable(launcher):
    async with connect(launcher, "core-only", tier="core") as (session, _):
        run = outcome(await session.call_tool("bernstein_run", {"goal": "cancel me if you can"})).payload
        await call_is_refused(session, "bernstein_cancel", {"task_id": run["task_id"]})
        handle = outcome(await session.call_tool("bernstein_run_status", {"run_id": run["run_id"]})).payload
        assert handle["status"] == "working", "a refused call must change nothing"


async def test_unknown_tool_is_an_error(launcher):
    async with connect(launcher, "unknown-tool") as (session, _):
        await call_is_refused(session, "bernstein_no_such_tool", {})
        await call_is_refused(session, "", {})
        # still serving
        assert (await session.list_tools()).tools


async def test_instructions_are_short_and_name_only_registered_tools(launcher):
    async with connect(launcher, "instructions", tier="all") as (session, init):
        registered = {t.name for t in (await session.list_tools()).tools}
    text = init.instructions
    assert text and len(text) <= 900, f"instructions: {len(text or '')} characters"
    named = set(re.findall(r"\bbernstein_[a-z_]+\b", text))
    assert {"bernstein_run", "bernstein_run_status"} <= named, text
    assert named <= registered, f"instructions name unregistered tools: {sorted(named - registered)}"
    assert init.serverInfo.name
    assert init.protocolVersion == LATEST_PROTOCOL_VERSION


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_older_protocol_versions_through_the_sdk(launcher, monkeypatch, version):
    """The SDK offers an older revision; the server must answer in it (and the transcript is
    validated against that revision's schema; 2024-11-05 against 2025-03-26's)."""
    import mcp.types

    monkeypatch.setattr(mcp.types, "LATEST_PROTOCOL_VERSION", version)
    async with connect(launcher, f"old-{version}") as (session, init):
        assert init.protocolVersion == version
        names = {t.name for t in (await session.list_tools()).tools}
        assert CORE_TOOLS <= names
        status = outcome(await session.call_tool("bernstein_status", {}))
        assert not status.is_error and "counts" in status.payload
        assert (await session.list_prompts()).prompts
        assert (await session.list_resources()).resources
