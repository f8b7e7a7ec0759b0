"""Resource subscriptions in the handshake era over HTTP through the official SDK `mcp<2`, on
both runtimes: on a legacy SSE stream (`/sse`) `resources.subscribe` is advertised and a
subscribed run's update arrives on the stream when a second process on the same `.sdd/`
completes its task; over streamable HTTP (no sessions, no standing stream) the capability is
not advertised and `resources/subscribe` is answered without holding anything. Every server
message through the proxy is validated against the official schema at teardown.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import types

from harness import scenarios
from harness.sdk_handshake import connect
from harness.sdk_http import handshake_sse, handshake_streamable

pytestmark = pytest.mark.anyio

# A test's own bound on how long the update may take (the server looks at the head every
# 250 ms); the test asserts no timing.
DEADLINE_S = 30


async def test_a_legacy_stream_carries_the_update_of_a_run_another_process_completes(http_server, launcher):
    srv = http_server("sse-subscribe")
    updated: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ResourceUpdatedNotification
        ):
            updated.append(str(message.root.params.uri))
            arrived.set()

    async with handshake_sse(srv, message_handler=on_message) as (session, init):
        assert init.capabilities.resources.subscribe is True
        run_id = (await scenarios.ok(session, "bernstein_run", {"goal": "Stream my updates"}))["task_id"]
        uri = f"bernstein://runs/{run_id}"
        await session.subscribe_resource(uri)
        async with connect(launcher, "worker") as (worker, _):
            await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "w"})
            await scenarios.ok(worker, "bernstein_complete", {"task_id": run_id, "result_summary": "done"})

        async def until_completed() -> None:
            while True:
                await arrived.wait()
                arrived.clear()
                [content] = (await session.read_resource(uri)).contents
                if json.loads(content.text)["status"] == "completed":
                    return

        await asyncio.wait_for(until_completed(), DEADLINE_S)
        assert set(updated) == {uri}, updated


async def test_streamable_http_does_not_advertise_subscriptions_and_holds_none(http_server):
    srv = http_server("streamable-subscribe")
    async with handshake_streamable(srv) as (session, init):
        assert init.capabilities.resources.subscribe is False
        run_id = (await scenarios.ok(session, "bernstein_run", {"goal": "No stream here"}))["task_id"]
        # Accepted for clients that subscribe regardless; nothing is held, nothing is sent.
        assert (await session.subscribe_resource(f"bernstein://runs/{run_id}")).model_dump(exclude_none=True) == {}
        await session.unsubscribe_resource(f"bernstein://runs/{run_id}")
