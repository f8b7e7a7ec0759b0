"""Progress ticks of `bernstein_run_status` through the official SDK `mcp<2`: a poll with a
progress token gets one `notifications/progress` (progress = finished tasks of the run, total =
its tasks) before the result; a tick that would not advance is suppressed, also for a second
server process on the same ledger (the last tick sent is recorded); no token, no tick; the
sequence is strictly increasing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import scenarios
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio


async def poll(session, run_id: str, *, token: bool = True) -> list[tuple[float, float | None, str | None]]:
    ticks: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        ticks.append((progress, total, message))

    result = await session.call_tool(
        "bernstein_run_status", {"run_id": run_id}, progress_callback=on_progress if token else None
    )
    assert not result.isError
    return ticks


async def test_ticks_advance_strictly_across_instances(launcher, workdir: Path):
    async with connect(launcher, "one") as (one, _), connect(launcher, "two") as (two, _):
        run = await scenarios.ok(one, "bernstein_run", {"goal": "Ship in two steps"})
        run_id = run["task_id"]
        await scenarios.ok(one, "bernstein_run", {"goal": "first step", "parent_task_id": run_id})
        assert await poll(one, run_id, token=False) == []
        first = await poll(one, run_id)
        assert [(p, t) for p, t, _ in first] == [(0, 2)]
        assert "0 of 2" in first[0][2]
        # Recorded: neither this instance nor another one sends the same tick again.
        assert await poll(one, run_id) == []
        assert await poll(two, run_id) == []
        # A worker finishes the subtask: the next poll (on the other instance) advances.
        claimed = await scenarios.ok(two, "bernstein_claim", {"claimer_id": "worker-1"})
        await scenarios.ok(two, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "ok"})
        second = await poll(two, run_id)
        assert len(second) == 1 and second[0][0] > first[0][0] and second[0][1] == 2
        assert await poll(one, run_id) == []
