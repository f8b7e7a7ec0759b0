"""Task-augmented calls (revision 2025-11-25) through `mcp<2` over streamable HTTP and the
legacy HTTP+SSE transport, on both runtimes: a task's `tasks/result` request waits on the
server while a client of a second server on the same ledger moves the run along with the pull-worker
verbs, then answers the final CallToolResult; tasks/get and tasks/list see the same task.
"""

from __future__ import annotations

import anyio
import mcp.types as types
import pytest

from harness import scenarios
from harness.payloads import outcome
from harness.sdk_http import handshake_sse, handshake_streamable

pytestmark = pytest.mark.anyio

TRANSPORTS = {"streamable": handshake_streamable, "sse": handshake_sse}


@pytest.fixture(params=sorted(TRANSPORTS))
def connect(request):
    return TRANSPORTS[request.param]


async def test_a_task_waits_over_http_until_a_worker_finishes_it(http_server, connect):
    # Two servers over one ledger (one recording each): the host's and the worker's.
    host_srv = http_server("tasks-host", tier="standard")
    worker_srv = http_server("tasks-worker", tier="standard")
    async with connect(host_srv) as (host, init), connect(worker_srv) as (worker, _):
        assert init.capabilities.tasks is not None
        created = await host.experimental.call_tool_as_task("bernstein_run", {"goal": "Ship over HTTP"})
        task_id = created.task.taskId
        assert created.task.ttl == 86_400_000
        results: list[types.CallToolResult] = []

        async def wait_for_result():
            results.append(await host.experimental.get_task_result(task_id, types.CallToolResult))

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_result)
            claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "worker-http"})
            assert claimed["taskId"] == task_id
            await scenarios.ok(worker, "bernstein_complete", {"task_id": task_id, "result_summary": "ok"})
        assert outcome(results[0]).payload["status"] == "done"
        assert (await host.experimental.get_task(task_id)).status == "completed"
        listed = await host.experimental.list_tasks()
        assert [t.taskId for t in listed.tasks] == [task_id]
