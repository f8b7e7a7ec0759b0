"""The tasks extension (`io.modelcontextprotocol/tasks`) of the 2026-07-28 stateless era through
the official SDK `mcp>=2`: a client that declares the extension gets the flat
`CreateTaskResult` (`resultType: "task"`) from `bernstein_run` and finishes it by polling
tasks/get while a second server process on the same ledger moves the run along with the
pull-worker verbs; tasks/update and tasks/cancel acknowledge; a client that does not declare
the extension never gets a task. Every message is validated at teardown (the task results
against `ext-tasks/schema.json`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult, Result
from mcp_types._types import Request
from pydantic import TypeAdapter

from harness import scenarios
from harness.payloads import outcome
from harness.sdk_stateless import connect

pytestmark = pytest.mark.anyio

EXTENSION = "io.modelcontextprotocol/tasks"
TTL_MS = 86_400_000
RAW = TypeAdapter(dict[str, Any])


class CreatedTask(Result):
    """The flat CreateTaskResult of the extension."""

    result_type: Literal["task"]
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


async def tasks_request(session, method: str, params: dict) -> dict:
    return await session.send_request(Request[dict[str, Any], str](method=method, params=params), RAW)


class TasksExtension(ClientExtension):
    """Finishes a claimed task by polling tasks/get until it is terminal."""

    identifier = EXTENSION

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []
        self.started = anyio.Event()

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, task: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(task)
        self.started.set()
        while True:
            got = await tasks_request(ctx.session, "tasks/get", {"taskId": task.task_id})
            if got["status"] == "completed":
                return CallToolResult.model_validate(got["result"])
            if got["status"] in ("failed", "cancelled"):
                raise AssertionError(f"task ended {got['status']}: {got}")
            # Poll politely (the server suggests pollIntervalMs; the worker runs meanwhile).
            await anyio.sleep(0.05)


async def test_a_declaring_client_gets_a_task_and_finishes_it(launcher, workdir: Path):
    ext = TasksExtension()
    params = launcher.stdio_params("host")
    with launcher.sdk_errlog("host") as errlog:
        host = Client(stdio_client(params, errlog=errlog), mode="auto", cache=None, extensions=[ext])
        async with host, connect(launcher, "worker") as worker:
            results: list[CallToolResult] = []

            async def run_as_task():
                results.append(await host.call_tool("bernstein_run", {"goal": "Ship it as a task"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(run_as_task)
                await ext.started.wait()
                claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-1"})
                assert claimed["granted"] is True and claimed["taskId"] == ext.created[0].task_id
                await scenarios.ok(
                    worker, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "done"}
                )
            created = ext.created[0]
            assert created.ttl_ms == TTL_MS and created.status == "working"
            final = outcome(results[0])
            assert not final.is_error
            assert final.payload["task_id"] == created.task_id and final.payload["status"] == "done"

            # tasks/update acknowledges; cancelling a finished task is refused; another task
            # cancels and its status follows.
            session = host.session
            ack = await tasks_request(session, "tasks/update", {"taskId": created.task_id, "inputResponses": {}})
            assert ack.get("resultType", "complete") == "complete"
            error = scenarios.protocol_error_type()
            with pytest.raises(error) as e:
                await tasks_request(session, "tasks/cancel", {"taskId": created.task_id})
            assert e.value.error.code == -32602
            # The polling fallback sees the same run from a client without the extension.
            handle = await scenarios.ok(worker, "bernstein_run_status", {"run_id": created.task_id})
            assert handle["status"] == "completed"


async def test_a_client_without_the_extension_never_gets_a_task(launcher, workdir: Path):
    async with connect(launcher, "plain") as client:
        run = await scenarios.ok(client, "bernstein_run", {"goal": "plain run"})
        assert run["status"] == "open"
        got = await tasks_request(client.session, "tasks/get", {"taskId": run["task_id"]})
        assert got["status"] == "working" and got["ttlMs"] == TTL_MS
        await tasks_request(client.session, "tasks/cancel", {"taskId": run["task_id"]})
        got = await tasks_request(client.session, "tasks/get", {"taskId": run["task_id"]})
        assert got["status"] == "cancelled"
