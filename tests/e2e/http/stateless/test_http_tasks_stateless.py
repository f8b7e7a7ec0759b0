"""The 2026-07-28 tasks extension through `mcp>=2` over streamable HTTP, on both runtimes: a
client that declares `io.modelcontextprotocol/tasks` still gets the immediate run JSON from a
plain `bernstein_run` (the shape follows the call) and reads the run through tasks/get with the
run id while a client of a second server on the same ledger moves the run along.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Result
from mcp_types._types import Request
from pydantic import TypeAdapter

from harness import scenarios
from harness.payloads import outcome
from harness.sdk_http import stateless

pytestmark = pytest.mark.anyio

RAW = TypeAdapter(dict[str, Any])


class CreatedTask(Result):
    result_type: Literal["task"]
    task_id: str
    status: str
    ttl_ms: int | None


class TasksExtension(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, task: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(task)
        raise AssertionError(f"a plain tools/call answered a task: {task}")


async def tasks_get(session, task_id: str) -> dict:
    request = Request[dict[str, Any], str](method="tasks/get", params={"taskId": task_id})
    return await session.send_request(request, RAW)


async def test_a_declaring_client_gets_the_run_json_over_http(http_server):
    host_srv = http_server("tasks-host", tier="standard")
    worker_srv = http_server("tasks-worker", tier="standard")
    ext = TasksExtension()
    host = Client(host_srv.mcp_url, mode="auto", cache=None, extensions=[ext])
    async with host, stateless(worker_srv) as worker:
        run = outcome(await host.call_tool("bernstein_run", {"goal": "Ship it over HTTP"}))
        assert not run.is_error and ext.created == []
        run_id = run.payload["run_id"]
        assert run.payload["status"] == "open" and run.payload["poll_after_ms"] > 0
        got = await tasks_get(host.session, run_id)
        assert got["status"] == "working" and got["ttlMs"] == 86_400_000
        claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-http"})
        assert claimed["taskId"] == run.payload["task_id"]
        await scenarios.ok(worker, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "ok"})
        got = await tasks_get(host.session, run_id)
        assert got["status"] == "completed", got
        assert outcome(CallToolResult.model_validate(got["result"])).payload["status"] == "done"
        assert ext.created == []
