"""The tasks extension (`io.modelcontextprotocol/tasks`) of the 2026-07-28 stateless era through
the official SDK `mcp>=2`. The response shape follows the call, not the declared capability: a
client that declares the extension still gets the immediate run JSON from a plain
`bernstein_run` (never a `resultType: "task"` it would have to poll for the length of the run)
and reads the run through tasks/get with the run id while a second server process on the same
ledger moves the run along with the pull-worker verbs; tasks/update and tasks/cancel
acknowledge. A client that does not declare the extension is refused the tasks methods
(`-32021`) and follows the run with its tools. Every message is validated at teardown (the task results against
`ext-tasks/schema.json`).
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

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
    """Declares the extension and records every task result the server would hand it."""

    identifier = EXTENSION

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, task: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(task)
        raise AssertionError(f"a plain tools/call answered a task: {task}")


@asynccontextmanager
async def host_and_worker(launcher, ext: TasksExtension):
    """A host declaring the extension and a plain worker, each its own server process."""
    params = launcher.stdio_params("host")
    with launcher.sdk_errlog("host") as errlog:
        host = Client(stdio_client(params, errlog=errlog), mode="auto", cache=None, extensions=[ext])
        async with host, connect(launcher, "worker") as worker:
            yield host, worker


async def test_a_declaring_client_gets_the_run_json_and_reads_the_run_through_tasks_get(
    launcher, workdir: Path
):
    ext = TasksExtension()
    async with host_and_worker(launcher, ext) as (host, worker):
        run = outcome(await host.call_tool("bernstein_run", {"goal": "Ship it as a task"}))
        assert not run.is_error and ext.created == []
        run_id = run.payload["run_id"]
        assert run.payload["task_id"] and run.payload["poll_after_ms"] > 0
        session = host.session
        got = await tasks_request(session, "tasks/get", {"taskId": run_id})
        assert got["status"] == "working" and got["ttlMs"] == TTL_MS
        claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-1"})
        assert claimed["granted"] is True and claimed["taskId"] == run.payload["task_id"]
        await scenarios.ok(worker, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "done"})
        got = await tasks_request(session, "tasks/get", {"taskId": run_id})
        assert got["status"] == "completed", got
        final = outcome(CallToolResult.model_validate(got["result"]))
        assert not final.is_error
        assert final.payload["task_id"] == run.payload["task_id"] and final.payload["status"] == "done"

        # tasks/update acknowledges; cancelling a finished task is acknowledged alike
        # (the extension's idempotent cancel) and leaves it completed.
        ack = await tasks_request(session, "tasks/update", {"taskId": run_id, "inputResponses": {}})
        assert ack.get("resultType", "complete") == "complete"
        ack = await tasks_request(session, "tasks/cancel", {"taskId": run_id})
        assert ack.get("resultType", "complete") == "complete"
        got = await tasks_request(session, "tasks/get", {"taskId": run_id})
        assert got["status"] == "completed", got
        # The polling fallback sees the same run from a client without the extension.
        handle = await scenarios.ok(worker, "bernstein_run_status", {"run_id": run_id})
        assert handle["status"] == "completed"
        assert ext.created == []


async def test_a_workers_question_is_offered_by_tasks_get_and_answered_by_tasks_update(
    launcher, workdir: Path
):
    async with host_and_worker(launcher, TasksExtension()) as (host, worker):
        run = outcome(await host.call_tool("bernstein_run", {"goal": "Pick a region"}))
        run_id = run.payload["run_id"]
        session = host.session
        claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-1"})
        task = claimed["taskId"]
        await scenarios.ok(
            worker,
            "bernstein_post_message",
            {"task_id": task, "kind": "question", "body": "Which region?", "sender": "worker-1"},
        )
        got = await tasks_request(session, "tasks/get", {"taskId": run_id})
        assert got["status"] == "input_required", got
        [(key, request)] = got["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert "Which region?" in request["params"]["message"]
        answer = {"action": "accept", "content": {"answer": "eu-west-1"}}
        await tasks_request(session, "tasks/update", {"taskId": run_id, "inputResponses": {key: answer}})
        got = await tasks_request(session, "tasks/get", {"taskId": run_id})
        assert got["status"] == "working" and "inputRequests" not in got, got
        # The worker reads the answer in its mailbox: from the host, signed like any post.
        read = await worker.read_resource(f"bernstein://tasks/{task}/mailbox")
        entries = json.loads(read.contents[0].text)["entries"]
        assert [(e["kind"], e["sender"], e["body"]) for e in entries][-1] == ("answer", "host", "eu-west-1")
        await scenarios.ok(worker, "bernstein_complete", {"task_id": task, "result_summary": "done"})
        got = await tasks_request(session, "tasks/get", {"taskId": run_id})
        assert got["status"] == "completed"


async def test_a_client_without_the_extension_never_gets_a_task(launcher, workdir: Path):
    async with connect(launcher, "plain") as client:
        run = await scenarios.ok(client, "bernstein_run", {"goal": "plain run"})
        assert run["status"] == "open"
        # The tasks methods need the extension declared in each request (SEP-2663): -32021,
        # naming it, and nothing changes; the run's own tools serve such a client.
        error = scenarios.protocol_error_type()
        for method in ("tasks/get", "tasks/cancel"):
            with pytest.raises(error) as e:
                await tasks_request(client.session, method, {"taskId": run["task_id"]})
            assert e.value.error.code == -32021
            assert EXTENSION in e.value.error.data["requiredCapabilities"]["extensions"]
        handle = await scenarios.ok(client, "bernstein_run_status", {"run_id": run["run_id"]})
        assert handle["status"] == "working"
        await scenarios.ok(client, "bernstein_cancel", {"task_id": run["task_id"]})
        handle = await scenarios.ok(client, "bernstein_run_status", {"run_id": run["run_id"]})
        assert handle["status"] == "cancelled"
