"""Task-augmented calls of revision 2025-11-25 through the official SDK `mcp<2`: a
`bernstein_run` started as a task is driven to completion through tasks/get and tasks/result
while a second server process on the same ledger moves it along with the pull-worker verbs;
tasks/list pages with its cursor; tasks/cancel; the errors the revision prescribes; and the
same run through the polling fallback (`bernstein_run_status`).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp.types as types
import pytest

from harness import scenarios
from harness.payloads import outcome
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio

TTL_MS = 86_400_000


async def claim_and_complete(worker) -> str:
    claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-1"})
    assert claimed["granted"] is True, claimed
    task = claimed["taskId"]
    await scenarios.ok(worker, "bernstein_complete", {"task_id": task, "result_summary": "done"})
    return task


async def test_a_task_run_is_driven_to_completion_while_tasks_result_waits(launcher, workdir: Path):
    async with connect(launcher, "host") as (host, init), connect(launcher, "worker") as (worker, _):
        caps = init.capabilities.model_dump(by_alias=True, exclude_none=True)
        assert caps["tasks"]["requests"]["tools"]["call"] == {}
        tools = {t.name: t for t in (await host.list_tools()).tools}
        assert tools["bernstein_run"].execution.taskSupport == "optional"
        assert tools["bernstein_run_status"].execution is None, "absent: the default, forbidden"

        created = await host.experimental.call_tool_as_task("bernstein_run", {"goal": "Ship the endpoint"})
        task_id = created.task.taskId
        assert created.task.status == "working"
        assert created.task.ttl == TTL_MS
        got = await host.experimental.get_task(task_id)
        assert got.status == "working" and got.ttl == TTL_MS

        results: list[types.CallToolResult] = []

        async def wait_for_result():
            results.append(await host.experimental.get_task_result(task_id, types.CallToolResult))

        # tasks/result is answered only once the task is terminal; the other process finishes it.
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_result)
            assert await claim_and_complete(worker) == task_id
        final = results[0]
        assert final.isError is False
        payload = outcome(final).payload
        assert payload["task_id"] == task_id and payload["status"] == "done"
        assert final.meta["io.modelcontextprotocol/related-task"]["taskId"] == task_id
        done = await host.experimental.get_task(task_id)
        assert done.status == "completed"

        # The polling fallback sees the same run.
        handle = await scenarios.ok(host, "bernstein_run_status", {"run_id": task_id})
        assert handle["status"] == "completed" and handle["runId"] == task_id


async def test_a_workers_question_is_put_to_the_host_waiting_on_tasks_result(launcher, workdir: Path):
    asked: list[types.ElicitRequestParams] = []

    async def person(context, params: types.ElicitRequestParams):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"answer": "eu-west-1"})

    async with (
        connect(launcher, "host", elicitation_callback=person) as (host, _),
        connect(launcher, "worker") as (worker, _),
    ):
        created = await host.experimental.call_tool_as_task("bernstein_run", {"goal": "Deploy"})
        task_id = created.task.taskId
        claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-1"})
        assert claimed["taskId"] == task_id
        await scenarios.ok(
            worker,
            "bernstein_post_message",
            {"task_id": task_id, "kind": "question", "body": "Which region?", "sender": "worker-1"},
        )
        got = await host.experimental.get_task(task_id)
        assert got.status == "input_required" and "Which region?" in got.statusMessage

        results: list[types.CallToolResult] = []

        async def wait_for_result():
            results.append(await host.experimental.get_task_result(task_id, types.CallToolResult))

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_result)
            # The worker sees the host's answer in its mailbox, then finishes.
            with anyio.fail_after(20):
                while True:
                    read = await worker.read_resource(f"bernstein://tasks/{task_id}/mailbox")
                    if "eu-west-1" in read.contents[0].text:
                        break
                    await anyio.sleep(0.1)
            await scenarios.ok(worker, "bernstein_complete", {"task_id": task_id, "result_summary": "deployed"})
        assert len(asked) == 1 and "Which region?" in asked[0].message
        meta = asked[0].model_dump(by_alias=True, exclude_none=True)["_meta"]
        assert meta["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        assert results[0].isError is False
        entries = json.loads(read.contents[0].text)
        answer = [e for e in entries["entries"] if e["kind"] == "answer"]
        assert [(e["sender"], e["body"]) for e in answer] == [("host", "eu-west-1")], entries
        assert (await host.experimental.get_task(task_id)).status == "completed"


async def test_tasks_list_pages_and_cancel_and_errors(launcher, workdir: Path):
    error = scenarios.protocol_error_type()
    async with connect(launcher, "host") as (host, _):
        ids = []
        for i in range(52):
            created = await host.experimental.call_tool_as_task("bernstein_run", {"goal": f"goal {i}"})
            ids.append(created.task.taskId)
        first = await host.experimental.list_tasks()
        assert len(first.tasks) == 50 and first.nextCursor
        second = await host.experimental.list_tasks(first.nextCursor)
        assert second.nextCursor is None
        listed = [t.taskId for t in first.tasks + second.tasks]
        assert listed == sorted(ids)
        assert all(t.ttl == TTL_MS for t in first.tasks + second.tasks)

        cancelled = await host.experimental.cancel_task(ids[0])
        assert cancelled.status == "cancelled"
        with pytest.raises(error) as e:
            await host.experimental.cancel_task(ids[0])
        assert e.value.error.code == -32602
        with pytest.raises(error) as e:
            await host.experimental.get_task("T-0123456789abcdef")
        assert e.value.error.code == -32602
        with pytest.raises(error) as e:
            await host.experimental.list_tasks("not-a-cursor!")
        assert e.value.error.code == -32602
        with pytest.raises(error) as e:
            await host.experimental.call_tool_as_task("bernstein_run_status", {"run_id": ids[1]})
        assert e.value.error.code == -32601
        # A plain call stays a plain CallToolResult.
        plain = await scenarios.ok(host, "bernstein_run", {"goal": "plain"})
        assert plain["status"] == "open"
        result = await host.experimental.get_task_result(ids[0], types.CallToolResult)
        assert result.isError is True


async def test_a_waiting_tasks_result_does_not_hold_up_the_connection(launcher, workdir: Path):
    async with connect(launcher, "host") as (host, _):
        created = await host.experimental.call_tool_as_task("bernstein_run", {"goal": "cancel me"})
        task_id = created.task.taskId
        results: list[types.CallToolResult] = []

        async def wait_for_result():
            results.append(await host.experimental.get_task_result(task_id, types.CallToolResult))

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_result)
            # The same connection keeps answering while tasks/result waits; the cancel ends it.
            got = await host.experimental.get_task(task_id)
            assert got.status == "working"
            cancelled = await host.experimental.cancel_task(task_id)
            assert cancelled.status == "cancelled"
        assert results[0].isError is True
        assert outcome(results[0]).payload["status"] == "cancelled"
