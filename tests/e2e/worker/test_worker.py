"""The worker runner end to end (issue 6): `bernstein mcp --transport http`, the `mcp<2` SDK as
the host, and `bernstein worker --url` processes running shell-script agents.

* a run with two dependent subtasks is executed in order and reaches `completed`; every claim
  receipt verifies offline and the ledger verifies;
* a failing agent fails its run with the exit status; a hanging one is stopped at the timeout
  (its whole process group) and fails its run;
* `bernstein_shutdown_orchestrator` while two agents run: no new claims, both drain, exit 0;
  a shutdown whose grace runs out stops the agent and releases the task back to open;
* kill -9 of a worker mid-task: after the lease another worker reclaims the task (recorded) and
  finishes it.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import anyio
import pytest

from harness import scenarios
from harness.launch import run_cli
from harness.ledger import assert_verifies, ledger_lines
from harness.sdk_http import handshake_streamable


pytestmark = pytest.mark.anyio

# Each agent leaves its process-group id so a test can check it is gone (or clean it up).
PIDFILE = 'echo "$$" > "agent-$BERNSTEIN_TASK_ID.pid"'


def records(workdir: Path, kind: str) -> list[dict]:
    """Bodies of every ledger record of `kind`, in order."""
    out = []
    for line in ledger_lines(workdir / ".sdd"):
        rec = json.loads(line.raw)
        if rec.get("kind") == kind:
            out.append(rec["body"])
    return out


async def run(host, goal: str, **extra) -> dict:
    return await scenarios.ok(host, "bernstein_run", {"goal": goal, **extra})


async def wait_run(host, run_id: str, want: set[str], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        handle = await scenarios.ok(host, "bernstein_run_status", {"run_id": run_id})
        if handle["status"] in want:
            return handle["status"]
        assert time.monotonic() < deadline, f"run {run_id} still {handle['status']} after {timeout}s"
        await anyio.sleep(0.1)  # polling the run handle, as a host does


def verify_receipts(worker, workdir, expected: int) -> list[dict]:
    files = worker.receipt_files()
    assert len(files) == expected, (files, worker.text())
    for f in files:
        proc = run_cli(["backlog", "verify-claim", "--workdir", str(workdir), "--receipt", str(f)])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.startswith("OK: claim of "), proc.stdout
    return files


def live_members(pgid: int) -> list[int]:
    """Pids of the process group `pgid` that are not zombies (an orphaned zombie waits for an
    init that may never reap it in a container; it runs nothing)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            out.append(int(stat.parent.name))
    return out


def failed_reason(workdir, task_id: str) -> str:
    changes = [b for b in records(workdir, "task.status") if b["task_id"] == task_id and b["to"] == "failed"]
    assert len(changes) == 1, changes
    return changes[0]["reason"]


async def test_a_run_with_dependent_subtasks_is_executed_in_order(server, workers, workdir):
    agent = (
        f'{PIDFILE}; echo "$BERNSTEIN_TASK_ID" >> order.log; cat > "stdin-$BERNSTEIN_TASK_ID.json"; '
        'echo "working on $BERNSTEIN_TASK_GOAL (run $BERNSTEIN_RUN_ID, role $BERNSTEIN_TASK_ROLE)"; '
        'echo "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"; echo "RESULT: did $BERNSTEIN_TASK_GOAL"'
    )
    async with handshake_streamable(server) as (host, _):
        root = await run(host, "Ship the health endpoint")
        first = await run(host, "Write the endpoint", parent_task_id=root["task_id"])
        second = await run(
            host, "Test the endpoint", parent_task_id=root["task_id"], depends_on=[first["task_id"]]
        )
        worker = workers(agent, "--claimer-id", "worker-e2e")
        assert await wait_run(host, root["run_id"], {"completed", "failed"}) == "completed"
    assert (workdir / "order.log").read_text().split() == [first["task_id"], second["task_id"]]
    assert worker.stop() == 0, worker.text()
    # The agent got the task on stdin and in its environment.
    stdin = json.loads((workdir / f"stdin-{first['task_id']}.json").read_text())
    assert (stdin["task_id"], stdin["goal"], stdin["claimer_id"]) == (
        first["task_id"], "Write the endpoint", "worker-e2e"
    )
    # Started, progress and completion are in the ledger; the summary is the RESULT: line.
    done = [b for b in records(workdir, "task.status") if b["to"] == "done"]
    summaries = {b["task_id"]: b.get("summary") for b in done}
    assert summaries[first["task_id"]] == "did Write the endpoint"
    started = [b for b in records(workdir, "run.task_status") if b["to"] == "in_progress"]
    assert {b["task_id"] for b in started} == {first["task_id"], second["task_id"]}
    bodies = [m["body"] for m in records(workdir, "mailbox.message")]
    assert any("working on Write the endpoint" in b for b in bodies), bodies
    # The secret the agent printed reached the mailbox redacted, and no ledger line holds it.
    assert any("[REDACTED:" in b for b in bodies), bodies
    ledger = b"".join(p.read_bytes() for p in (workdir / ".sdd").rglob("*.jsonl"))
    assert b"ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in ledger
    verify_receipts(worker, workdir, 2)
    assert_verifies(workdir / ".sdd")


async def test_a_failing_agent_and_a_hanging_agent_fail_their_runs(server, workers, workdir):
    agent = (
        f'{PIDFILE}; case "$BERNSTEIN_TASK_GOAL" in '
        '*[Hh]ang*) echo "going to sleep"; sleep 60;; '
        '*) echo "about to fail" >&2; exit 7;; esac'
    )
    async with handshake_streamable(server) as (host, _):
        failing = await run(host, "Fail loudly")
        hanging = await run(host, "Hang forever")
        worker = workers(agent, "--concurrency", "2", "--task-timeout", "2s")
        assert await wait_run(host, failing["run_id"], {"completed", "failed"}) == "failed"
        assert await wait_run(host, hanging["run_id"], {"completed", "failed"}) == "failed"
    reason = failed_reason(workdir, failing["task_id"])
    assert "exited with status 7" in reason and "about to fail" in reason, reason
    assert failed_reason(workdir, hanging["task_id"]) == "timed out after 2s"
    # The hanging agent's whole process group is gone.
    assert not live_members(int((workdir / f"agent-{hanging['task_id']}.pid").read_text()))
    assert worker.stop() == 0, worker.text()


async def test_shutdown_through_the_mcp_tool_drains_running_agents(server, workers, workdir):
    agent = f'{PIDFILE}; echo "started"; sleep 3; echo "RESULT: finished $BERNSTEIN_TASK_ID"'
    async with handshake_streamable(server) as (host, _):
        one = await run(host, "First long job")
        two = await run(host, "Second long job")
        worker = workers(agent, "--concurrency", "2", "--grace", "30s")
        worker.wait_for("| started", count=2)
        third = await run(host, "Posted after the agents started")
        await scenarios.ok(host, "bernstein_shutdown_orchestrator", {})
        rc = await anyio.to_thread.run_sync(lambda: worker.proc.wait(timeout=30))
        assert rc == 0, worker.text()
        assert await wait_run(host, one["run_id"], {"completed", "failed"}, timeout=1) == "completed"
        assert await wait_run(host, two["run_id"], {"completed", "failed"}, timeout=1) == "completed"
        # No new claim after the signal: the third task was never offered to this worker.
        assert await wait_run(host, third["run_id"], {"working"}, timeout=1) == "working"
    assert "shutdown (" in worker.text()
    granted = [r for r in records(workdir, "task.claim_receipt") if r["granted"]]
    assert {r["task_id"] for r in granted} == {one["task_id"], two["task_id"]}
    verify_receipts(worker, workdir, 2)


async def test_a_shutdown_past_its_grace_stops_the_agent_and_releases_the_task(server, workers, workdir):
    agent = f'{PIDFILE}; echo "started"; sleep 60'
    async with handshake_streamable(server) as (host, _):
        job = await run(host, "Too long to drain")
        worker = workers(agent, "--grace", "1s")
        worker.wait_for("| started")
        assert worker.stop(signal.SIGTERM) == 0, worker.text()
        assert await wait_run(host, job["run_id"], {"working"}, timeout=1) == "working"
        status = await scenarios.ok(host, "bernstein_status", {"status": "open"})
        assert [t["id"] for t in status["tasks"]] == [job["task_id"]]
    released = [b for b in records(workdir, "task.status") if b["to"] == "open" and b["from"] == "in_progress"]
    assert len(released) == 1 and released[0]["reason"].startswith("released by "), released
    assert not live_members(int((workdir / f"agent-{job['task_id']}.pid").read_text()))


async def test_a_killed_workers_task_is_reclaimed_after_its_lease(server, workers, workdir):
    async with handshake_streamable(server) as (host, _):
        job = await run(host, "Survive a crash")
        doomed = workers(f'{PIDFILE}; echo "started"; sleep 60', "--claimer-id", "worker-a", "--lease", "2s")
        doomed.wait_for("| started")
        assert doomed.stop(signal.SIGKILL) == -signal.SIGKILL
        rescuer = workers('echo "RESULT: finished by b"', "--claimer-id", "worker-b", "--lease", "5s")
        assert await wait_run(host, job["run_id"], {"completed", "failed"}) == "completed"
    reclaims = records(workdir, "task.reclaimed")
    assert len(reclaims) == 1, reclaims
    assert (reclaims[0]["previous_claimer_id"], reclaims[0]["claimer_id"]) == ("worker-a", "worker-b")
    assert reclaims[0]["at"] > reclaims[0]["expired_at"]
    assert rescuer.stop() == 0, rescuer.text()
    verify_receipts(doomed, workdir, 1)
    verify_receipts(rescuer, workdir, 1)


def claims(workdir: Path) -> tuple[int, int, int]:
    """The claims the ledger records: (granted receipts, refused receipts, cancelled calls)."""
    receipts = records(workdir, "task.claim_receipt")
    calls = [b for b in records(workdir, "mcp.stateless_call") if b.get("tool") == "bernstein_claim"]
    return (
        sum(1 for r in receipts if r["granted"]),
        sum(1 for r in receipts if not r["granted"]),
        sum(1 for c in calls if c.get("error") == "cancelled"),
    )


async def test_an_idle_worker_waits_in_its_claim_wakes_for_work_and_stops_at_once(server, workers, workdir):
    worker = workers('echo "RESULT: woken"', "--claim-wait", "100s")
    worker.wait_for(" up: concurrency")
    time.sleep(1.0)  # idle, waiting on the server: nothing is recorded meanwhile
    assert claims(workdir) == (0, 0, 0)
    async with handshake_streamable(server) as (host, _):
        asked = time.monotonic()
        job = await run(host, "Wake the worker")
        # Far sooner than the claim's 100 s wait: the new task woke it.
        assert await wait_run(host, job["run_id"], {"completed", "failed"}, timeout=15) == "completed"
        assert time.monotonic() - asked < 15
    worker.wait_for("completed: ")
    time.sleep(0.5)  # waiting again
    stopping = time.monotonic()
    assert worker.stop(signal.SIGTERM, timeout=10) == 0, worker.text()
    assert time.monotonic() - stopping < 5, worker.text()
    # One granted claim, no empty receipt, and the waiting claim ended as cancelled.
    assert claims(workdir) == (1, 0, 1)
    assert_verifies(workdir / ".sdd")


async def test_an_idle_worker_records_one_empty_claim_per_wait(server, workers, workdir):
    worker = workers("true", "--claim-wait", "1s")
    worker.wait_for(" up: concurrency")
    time.sleep(5.5)
    assert worker.stop(signal.SIGTERM, timeout=10) == 0, worker.text()
    granted, refused, cancelled = claims(workdir)
    # 5.5 s of 1 s waits: about five empty claims, each one receipt and one call record.
    assert granted == 0 and 3 <= refused <= 7 and cancelled <= 1, (refused, cancelled)
    calls = [b for b in records(workdir, "mcp.stateless_call") if b.get("tool") == "bernstein_claim"]
    assert len(calls) == refused + cancelled
