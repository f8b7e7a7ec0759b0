"""`subscriptions/listen` (2026-07-28) over streamable HTTP through the official SDK `mcp>=2`:
`Client.listen(resource_subscriptions=[run])` opens the POST's SSE stream, is acknowledged with
the run it honours, and yields a `ResourceUpdated` for the run when a second process on the same
`.sdd/` completes its task; leaving the context ends the stream. `server/discover` advertises
`resources.subscribe`. Every message through the proxy is validated against the 2026-07-28 schema
at teardown.
"""

from __future__ import annotations

import json

import anyio
import pytest

from harness import scenarios
from harness.sdk_http import stateless
from harness.sdk_stateless import connect

pytestmark = pytest.mark.anyio

# A test's own bound on how long the update may take (the server looks at the head every
# 250 ms); the test asserts no timing.
DEADLINE_S = 30


# The client ends the stream by closing it, which carries no response (SEP-2575).
@pytest.mark.transcript(require_all_answered=False)
async def test_a_listen_stream_hears_its_run_completed_in_another_process(http_server, launcher):
    from mcp.shared.subscriptions import ResourceUpdated

    srv = http_server("listen")
    async with stateless(srv) as client:
        assert client.protocol_version == "2026-07-28"
        run = await scenarios.ok(client, "bernstein_run", {"goal": "Listen to me"})
        run_id = run["task_id"]
        uri = f"bernstein://runs/{run_id}"
        async with client.listen(resource_subscriptions=[uri], tools_list_changed=True) as sub:
            # Only what is honoured: the run, not list changes (the lists never change).
            assert sub.honored.resource_subscriptions == [uri]
            assert not sub.honored.tools_list_changed
            async with connect(launcher, "worker") as worker:
                claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "w"})
                assert claimed["taskId"] == run_id, claimed
                await scenarios.ok(worker, "bernstein_complete", {"task_id": run_id, "result_summary": "done"})
            with anyio.fail_after(DEADLINE_S):
                async for event in sub:
                    assert event == ResourceUpdated(uri=uri), event
                    [content] = (await client.read_resource(uri)).contents
                    if json.loads(content.text)["status"] == "completed":
                        break
