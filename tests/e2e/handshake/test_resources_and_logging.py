"""Runs and tasks as resources, and logging, through the official SDK `mcp<2` over stdio: the
run templates are listed, a run is read as JSON equal to `bernstein_run_status`'s answer, the
`resource_link` a tool result carries is followed, run and task ids complete, an unknown run
is the resource-not-found error; `logging/setLevel` makes a `bernstein_run_status` long poll
send the run states it sees as `notifications/message`, and without it none are sent. Every
message is checked against the official schema at teardown (the launcher's recording).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp import McpError
from mcp.types import ResourceTemplateReference

from harness import scenarios
from harness.payloads import outcome
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio

TEMPLATES = [
    "bernstein://runs/{run_id}",
    "bernstein://tasks/{task_id}",
    "bernstein://tasks/{task_id}/artifacts",
    "bernstein://tasks/{task_id}/mailbox",
]


def _json_of(read) -> dict:
    [content] = read.contents
    assert content.mimeType == "application/json"
    return json.loads(content.text)


async def test_a_run_reads_as_a_resource_and_its_ids_complete(launcher, workdir: Path):
    async with connect(launcher) as (session, init):
        assert init.capabilities.completions is not None
        listed = await session.list_resource_templates()
        assert sorted(t.uriTemplate for t in listed.resourceTemplates) == TEMPLATES
        started = await session.call_tool("bernstein_run", {"goal": "Read me as a resource"})
        assert not started.isError
        run_id = outcome(started).payload["task_id"]
        links = [c for c in started.content if c.type == "resource_link"]
        assert [str(link.uri) for link in links] == [f"bernstein://runs/{run_id}"]
        # Following the link reads what bernstein_run_status answers.
        read = await session.read_resource(links[0].uri)
        status = await scenarios.ok(session, "bernstein_run_status", {"run_id": run_id})
        assert _json_of(read) == status
        child = await scenarios.ok(session, "bernstein_run", {"goal": "a step", "parent_task_id": run_id})
        task = _json_of(await session.read_resource(f"bernstein://tasks/{child['task_id']}"))
        assert task["run_id"] == run_id and task["goal"] == "a step"
        mailbox = _json_of(await session.read_resource(f"bernstein://tasks/{run_id}/mailbox"))
        assert mailbox == {"task_id": run_id, "entries": []}
        runs = await session.complete(ResourceTemplateReference(type="ref/resource", uri=TEMPLATES[0]), {"name": "run_id", "value": "T-"})
        assert runs.completion.values == [run_id]
        tasks = await session.complete(ResourceTemplateReference(type="ref/resource", uri=TEMPLATES[1]), {"name": "task_id", "value": ""})
        assert tasks.completion.values == [child["task_id"], run_id]
        with pytest.raises(McpError) as missing:
            await session.read_resource("bernstein://runs/T-0123456789abcdef")
        assert missing.value.error.code == -32002


async def test_a_long_poll_logs_the_run_states_it_sees_at_the_level_asked(launcher, workdir: Path):
    logs: list = []

    async def on_log(params) -> None:
        logs.append(params)

    async with connect(launcher, logging_callback=on_log) as (session, _):
        run = await scenarios.ok(session, "bernstein_run", {"goal": "Log what you see"})
        run_id = run["task_id"]
        # No level asked: no message.
        await scenarios.ok(session, "bernstein_run_status", {"run_id": run_id})
        assert logs == []
        await session.set_logging_level("info")
        poll = asyncio.create_task(session.call_tool("bernstein_run_status", {"run_id": run_id, "wait_ms": 20_000}))
        async with connect(launcher, "worker") as (worker, _):
            await asyncio.sleep(0.3)
            claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "w"})
            await asyncio.sleep(0.3)
            await scenarios.ok(worker, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "seen"})
        result = await poll
        assert not result.isError
        statuses = [m.data["status"] for m in logs]
        assert all(m.logger == "bernstein.run" and m.data["run_id"] == run_id for m in logs)
        assert statuses[0] == "working" and statuses[-1] == "completed", statuses
        assert logs[-1].level == "notice"
        # A level above what a working run logs at keeps those out.
        logs.clear()
        await session.set_logging_level("warning")
        await scenarios.ok(session, "bernstein_run_status", {"run_id": run_id})
        assert logs == []
