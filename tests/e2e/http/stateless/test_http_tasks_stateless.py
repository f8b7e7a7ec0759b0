"""The 2026-07-28 tasks extension through `mcp>=2` over streamable HTTP, on both runtimes: a
client that declares `io.modelcontextprotocol/tasks` gets a task from `bernstein_run` and
finishes it by polling tasks/get while a client of a second server on the same ledger moves
the run along; a client without the extension gets the plain result.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
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
        self.started = anyio.Event()

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, task: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(task)
        self.started.set()
        while True:
            request = Request[dict[str, Any], str](method="tasks/get", params={"taskId": task.task_id})
            got = await ctx.session.send_request(request, RAW)
            if got["status"] == "completed":
                return CallToolResult.model_validate(got["result"])
            assert got["status"] == "working", got
            await anyio.sleep(0.05)


async def test_a_declaring_client_gets_a_task_over_http(http_server):
    host_srv = http_server("tasks-host", tier="standard")
    worker_srv = http_server("tasks-worker", tier="standard")
    ext = TasksExtension()
    host = Client(host_srv.mcp_url, mode="auto", cache=None, extensions=[ext])
    async with host, stateless(worker_srv) as worker:
        results: list[CallToolResult] = []

        async def run_as_task():
            results.append(await host.call_tool("bernstein_run", {"goal": "Ship it over HTTP"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_as_task)
            await ext.started.wait()
            claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-http"})
            assert claimed["taskId"] == ext.created[0].task_id
            await scenarios.ok(worker, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "ok"})
        assert ext.created[0].ttl_ms == 86_400_000
        assert outcome(results[0]).payload["status"] == "done"
        plain = await scenarios.ok(worker, "bernstein_run", {"goal": "plain"})
        assert plain["status"] == "open"
