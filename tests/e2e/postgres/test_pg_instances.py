"""Three `bernstein mcp --transport http` instances on one PostgreSQL database (issue 8):
the official Python SDK (`mcp<2`, streamable HTTP) spread over them, byte-identical answers
to the same request from any instance (the `_meter` timing fields aside), racing claimers
over all three with every task granted exactly once, and an exported ledger that the offline
verifiers accept unchanged.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness import scenarios
from harness.http_raw import HANDSHAKE, MODERN, call_tool
from harness.reads_under_moves import verify_receipts
from harness.sdk_http import handshake_streamable
from pg_support import export_and_verify, normalised, payload

pytestmark = pytest.mark.anyio


async def test_sdk_hosts_over_three_instances_get_identical_answers(pg_servers, workdir):
    servers = pg_servers(3)
    async with handshake_streamable(servers[0]) as (a, _), handshake_streamable(servers[1]) as (b, _), \
            handshake_streamable(servers[2]) as (c, _):
        run = await scenarios.ok(a, "bernstein_run", {"goal": "one database, three instances"})
        run_id, task_id = run["run_id"], run["task_id"]
        # Written through A, read through B and C: the same ledger.
        for host in (b, c):
            status = await scenarios.ok(host, "bernstein_run_status", {"run_id": run_id})
            assert run_id in json.dumps(status)
        claimed = await scenarios.ok(b, "bernstein_claim", {"claimer_id": "worker-b"})
        assert claimed["taskId"] == task_id and claimed["granted"] is True
        # Nothing is left for a claimer on C.
        again = await scenarios.ok(c, "bernstein_claim", {"claimer_id": "worker-c"})
        assert again["granted"] is False
        await scenarios.ok(c, "bernstein_complete", {"task_id": task_id, "result_summary": "done via C"})
    for version in (HANDSHAKE, MODERN):
        for name, args in (("bernstein_run_status", {"run_id": run_id}), ("bernstein_status", {})):
            replies = [call_tool(s.direct_base, name, args, version=version, id_=7) for s in servers]
            assert all(r.status == 200 for r in replies), [r.body[:300] for r in replies]
            texts = [normalised(r) for r in replies]
            assert texts[0] == texts[1] == texts[2], (name, version, texts)
            spans = {r.headers.get("x-bernstein-span-id") for r in replies}
            assert len(spans) == 1, spans


def test_racing_claimers_get_each_task_exactly_once(pg_servers, pg_url, workdir, bernstein_bin, tmp_path):
    servers = pg_servers(3, record=False)
    tasks = set()
    for i in range(24):
        reply = call_tool(servers[i % 3].direct_base, "bernstein_run", {"goal": f"race task {i}"}, version=HANDSHAKE)
        assert reply.status == 200, reply.body[:300]
        tasks.add(payload(reply)["task_id"])
    granted: list[tuple[str, str]] = []
    receipts: list[dict] = []
    errors: list[str] = []
    lock = threading.Lock()

    def claimer(n: int) -> None:
        base = servers[n % 3].direct_base
        while True:
            reply = call_tool(base, "bernstein_claim", {"claimer_id": f"claimer-{n}"}, version=HANDSHAKE, id_=n)
            if reply.status != 200:
                with lock:
                    errors.append(f"{reply.status} {reply.body[:200]!r}")
                return
            got = payload(reply)
            if not got.get("granted"):
                return
            with lock:
                granted.append((got["taskId"], f"claimer-{n}"))
                receipts.append(got)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors
    claimed = [task for task, _ in granted]
    assert sorted(claimed) == sorted(tasks), "every task claimed exactly once"
    assert len(set(claimed)) == len(claimed)
    records = export_and_verify(bernstein_bin, workdir, pg_url, tmp_path / "export")
    # The ledger agrees: one granted receipt per task.
    receipted = [r["body"]["task_id"] for r in records if r["kind"] == "task.claim_receipt" and r["body"]["granted"]]
    assert sorted(receipted) == sorted(tasks)
    # Every receipt handed out verifies offline against the exported ledger, wherever its
    # instance placed the claim.
    verify_receipts(bernstein_bin, tmp_path / "export", receipts, tmp_path)


async def test_a_task_result_waiting_on_one_instance_wakes_on_anothers_commit(pg_servers):
    import anyio
    import mcp.types as types

    from harness.payloads import outcome

    host_srv, worker_srv = pg_servers(2)
    async with handshake_streamable(host_srv) as (host, init), handshake_streamable(worker_srv) as (worker, _):
        assert init.capabilities.tasks is not None
        created = await host.experimental.call_tool_as_task("bernstein_run", {"goal": "wake over PostgreSQL"})
        task_id = created.task.taskId
        results: list[types.CallToolResult] = []

        async def wait_for_result():
            results.append(await host.experimental.get_task_result(task_id, types.CallToolResult))

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_result)
            claimed = await scenarios.ok(worker, "bernstein_claim", {"claimer_id": "pg-worker"})
            assert claimed["taskId"] == task_id
            await scenarios.ok(worker, "bernstein_complete", {"task_id": task_id, "result_summary": "ok"})
        assert outcome(results[0]).payload["status"] == "done"
