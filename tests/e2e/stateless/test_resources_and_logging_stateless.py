"""Runs as resources and per-request logging in the 2026-07-28 era, through the official SDK
`mcp>=2`: the run templates are listed, the run's `resource_link` is followed to what
`bernstein_run_status` answers (with the stateless cache hints: a live run `ttlMs: 0`), run ids
complete; a client that sets a log level (`_meta["io.modelcontextprotocol/logLevel"]` on each
request) hears the run states a long poll sees as `notifications/message`, one that sets none
hears nothing. Every message is validated against the 2026-07-28 schema at teardown.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp.types import ResourceTemplateReference

from harness import scenarios
from harness.payloads import outcome
from harness.sdk_stateless import connect

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


def _server_lines(prefix: Path) -> list[dict]:
    path = Path(str(prefix) + ".server.jsonl")
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


async def test_a_run_reads_as_a_resource_with_cache_hints(launcher, workdir: Path):
    async with connect(launcher) as client:
        assert client.protocol_version == MODERN
        listed = await client.list_resource_templates()
        assert "bernstein://runs/{run_id}" in {t.uri_template for t in listed.resource_templates}
        started = await client.call_tool("bernstein_run", {"goal": "Read me statelessly"})
        run_id = outcome(started).payload["task_id"]
        links = [c for c in started.content if c.type == "resource_link"]
        assert [str(link.uri) for link in links] == [f"bernstein://runs/{run_id}"]
        read = await client.read_resource(str(links[0].uri))
        [content] = read.contents
        status = await scenarios.ok(client, "bernstein_run_status", {"run_id": run_id})
        assert json.loads(content.text) == status
        done = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="bernstein://runs/{run_id}"),
            {"name": "run_id", "value": ""},
        )
        assert done.completion.values == [run_id]
    # The read's result on the wire: a live run is stale at once.
    reads = [m for m in _server_lines(launcher.prefixes[-1]) if "contents" in m.get("result", {})]
    assert reads and reads[0]["result"]["ttlMs"] == 0 and reads[0]["result"]["cacheScope"] == "private"


async def test_logs_come_only_at_the_level_a_request_asks_for(launcher, workdir: Path):
    heard: list = []

    async def on_log(params) -> None:
        heard.append(params)

    async with connect(launcher, "quiet", client_kw={"logging_callback": on_log}) as quiet:
        run = await scenarios.ok(quiet, "bernstein_run", {"goal": "Log it"})
        await scenarios.ok(quiet, "bernstein_run_status", {"run_id": run["task_id"]})
    assert heard == [], "no level asked, yet notifications/message arrived"
    async with connect(launcher, "loud", client_kw={"logging_callback": on_log, "log_level": "info"}) as loud:
        run_id = (await scenarios.ok(loud, "bernstein_run", {"goal": "Log it loudly"}))["task_id"]
        poll = asyncio.create_task(loud.call_tool("bernstein_run_status", {"run_id": run_id, "wait_ms": 20_000}))
        async with connect(launcher, "worker") as worker:
            await asyncio.sleep(0.3)
            # The quiet run was created first, so it is claimed first.
            for _ in range(2):
                claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "w"})
                await scenarios.ok(worker, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "ok"})
        assert not (await poll).is_error
    statuses = [m.data["status"] for m in heard]
    assert statuses and statuses[-1] == "completed", statuses
    assert all(m.logger == "bernstein.run" and m.data["run_id"] == run_id for m in heard)
