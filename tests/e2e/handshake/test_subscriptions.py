"""Resource subscriptions in the handshake era through the official SDK `mcp<2` over stdio: a
host subscribed to a run (`resources/subscribe`) hears `notifications/resources/updated` for it
when a second `bernstein mcp` process on the same `.sdd/` claims and completes the run's task,
with no polling by the host; the capability is advertised; an unknown resource is refused;
after `resources/unsubscribe` nothing is held. Every message is checked against the official
schema at teardown.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import McpError, types

from harness import scenarios
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio

# A test's own bound on how long the update may take to arrive (the server looks at the
# head every 250 ms); the test asserts no timing.
DEADLINE_S = 30


async def test_a_subscribed_run_hears_a_task_completed_in_another_process(launcher):
    updated: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ResourceUpdatedNotification
        ):
            updated.append(str(message.root.params.uri))
            arrived.set()

    async with connect(launcher, message_handler=on_message) as (session, init):
        assert init.capabilities.resources is not None and init.capabilities.resources.subscribe is True
        run = await scenarios.ok(session, "bernstein_run", {"goal": "Watch me from afar"})
        run_id = run["task_id"]
        uri = f"bernstein://runs/{run_id}"
        with pytest.raises(McpError) as missing:
            await session.subscribe_resource("bernstein://runs/T-0123456789abcdef")
        assert missing.value.error.code == -32002
        await session.subscribe_resource(uri)

        async with connect(launcher, "worker") as (worker, _):
            claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "far-worker"})
            assert claimed["taskId"] == run_id, claimed
            await scenarios.ok(worker, "bernstein_complete", {"task_id": run_id, "result_summary": "done"})

        async def until_completed() -> dict:
            # Each update says "read me again"; the host reads only when told.
            while True:
                await arrived.wait()
                arrived.clear()
                [content] = (await session.read_resource(uri)).contents
                read = json.loads(content.text)
                if read["status"] == "completed":
                    return read

        read = await asyncio.wait_for(until_completed(), DEADLINE_S)
        assert run_id in json.dumps(read)
        assert set(updated) == {uri}, updated
        await session.unsubscribe_resource(uri)
