"""Three `bernstein mcp --transport http` instances on one PostgreSQL database (issues 8, 39):
the official Python SDK (`mcp<2`, streamable HTTP) spread over them, byte-identical answers
to the same request from any instance (the `_meter` timing fields aside), racing claimers
over all three (each serving with two engines, `BERNSTEIN_MCP_ENGINES=2`) with every task
granted exactly once, the same race with one instance killed with SIGKILL in the middle of it
(nothing acknowledged lost, no task granted twice), and an exported ledger that the offline
verifiers accept unchanged.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from pathlib import Path

import pytest

from harness import scenarios
from harness.http_raw import HANDSHAKE, MODERN, call_tool
from harness.reads_under_moves import verify_receipts
from harness.sdk_http import handshake_streamable
from pg_support import export_and_verify, normalised, payload

pytestmark = pytest.mark.anyio

# Each instance of the racing tests serves with two engines (event loops) over its store.
TWO_ENGINES = {"BERNSTEIN_MCP_ENGINES": "2"}


def create_runs(servers, count: int, goal: str) -> set[str]:
    """`count` runs created round-robin over `servers`; their task ids."""
    tasks = set()
    for i in range(count):
        reply = call_tool(servers[i % len(servers)].direct_base, "bernstein_run", {"goal": f"{goal} {i}"},
                          version=HANDSHAKE)
        assert reply.status == 200, reply.body[:300]
        tasks.add(payload(reply)["task_id"])
    return tasks


class ClaimRace:
    """`claimers` threads, claimer n on `servers[n % len(servers)]`, each claiming until a claim
    is not granted or its call fails. A failed call of a claimer on the server `kill` ended counts
    it as cut off; any other failure is an error."""

    def __init__(self, servers, claimers: int):
        self.servers = servers
        self.granted: list[tuple[str, str]] = []  # (task, claimer), as acknowledged
        self.receipts: list[dict] = []
        self.errors: list[str] = []
        self.cut: list[str] = []  # the claimers the kill cut off
        self.killed = None
        self.lock = threading.Condition()
        self.threads = [threading.Thread(target=self._claim, args=(n,)) for n in range(claimers)]
        for t in self.threads:
            t.start()

    def _claim(self, n: int) -> None:
        srv = self.servers[n % len(self.servers)]
        while True:
            try:
                reply = call_tool(srv.direct_base, "bernstein_claim", {"claimer_id": f"claimer-{n}"}, version=HANDSHAKE,
                                  id_=n)
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    if srv is self.killed:
                        self.cut.append(f"claimer-{n}")
                    else:
                        self.errors.append(f"claimer-{n}: {e!r}")
                return
            if reply.status != 200:
                with self.lock:
                    self.errors.append(f"claimer-{n}: {reply.status} {reply.body[:200]!r}")
                return
            got = payload(reply)
            if not got.get("granted"):
                return
            with self.lock:
                self.granted.append((got["taskId"], f"claimer-{n}"))
                self.receipts.append(got)
                self.lock.notify_all()

    def wait_for_grants(self, count: int, timeout: float) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: len(self.granted) >= count, timeout=timeout)

    def kill(self, server) -> int | None:
        """Ends `server` with SIGKILL (its claimers' next failures are cut-offs); its exit status."""
        with self.lock:
            self.killed = server
        return server.kill()

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=240)
        assert not any(t.is_alive() for t in self.threads)


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
    servers = pg_servers(3, record=False, env=TWO_ENGINES)
    tasks = create_runs(servers, 24, "race task")
    race = ClaimRace(servers, 12)
    race.join()
    assert not race.errors, race.errors
    receipts = race.receipts
    claimed = [task for task, _ in race.granted]
    assert sorted(claimed) == sorted(tasks), "every task claimed exactly once"
    assert len(set(claimed)) == len(claimed)
    records = export_and_verify(bernstein_bin, workdir, pg_url, tmp_path / "export")
    # The ledger agrees: one granted receipt per task.
    receipted = [r["body"]["task_id"] for r in records if r["kind"] == "task.claim_receipt" and r["body"]["granted"]]
    assert sorted(receipted) == sorted(tasks)
    # Every receipt handed out verifies offline against the exported ledger, wherever its
    # instance placed the claim.
    verify_receipts(bernstein_bin, tmp_path / "export", receipts, tmp_path)


def test_racing_claimers_lose_nothing_when_an_instance_is_killed(pg_servers, pg_url, workdir, bernstein_bin,
                                                                 tmp_path):
    """Twelve claimers race over three instances x 2 engines; once some claims were granted, one
    instance is killed with SIGKILL, cutting its claimers mid-call (perhaps mid group commit),
    while the others claim on until nothing is left. Only the killed instance's claimers see
    connection errors; every claim acknowledged to a client is in the exported ledger, which
    verifies; no task has two granted receipts; a granted receipt no client saw can only be a
    call that was in flight on the killed instance; the receipts verify offline; the other two
    instances still answer, alike."""
    servers = pg_servers(3, record=False, env=TWO_ENGINES)
    victim = servers[0]
    tasks = create_runs(servers, 36, "crash race")
    claimers = 12
    race = ClaimRace(servers, claimers)
    granted, receipts, errors, cut = race.granted, race.receipts, race.errors, race.cut
    assert race.wait_for_grants(6, timeout=120), (granted, errors)
    assert race.kill(victim) == -9
    with race.lock:
        granted_before_kill = len(granted)
    race.join()
    assert not errors, errors
    victims = {f"claimer-{n}" for n in range(0, claimers, 3)}
    assert cut and set(cut) <= victims, cut
    assert len(granted) > granted_before_kill, "the other instances went on claiming"
    acknowledged = dict(granted)
    assert len(acknowledged) == len(granted), "a task was acknowledged to two claimers"

    records = export_and_verify(bernstein_bin, workdir, pg_url, tmp_path / "export")
    created = Counter(r["body"]["task_id"] for r in records if r["kind"] == "task.created")
    assert set(created) == tasks and set(created.values()) == {1}, created
    grants = [r["body"] for r in records if r["kind"] == "task.claim_receipt" and r["body"]["granted"]]
    assert set(Counter(g["task_id"] for g in grants).values()) == {1}, "a task has two granted receipts"
    in_ledger = {g["task_id"]: g["claimer_id"] for g in grants}
    edges = [(r["body"]["task_id"], r["body"]["actor"]) for r in records
             if r["kind"] == "task.status" and (r["body"]["from"], r["body"]["to"]) == ("open", "claimed")]
    assert sorted(edges) == sorted(in_ledger.items()), "one open -> claimed record per grant, by its claimer"
    # The survivors claimed until nothing was open, so every task was granted once.
    assert set(in_ledger) == tasks
    for task, who in acknowledged.items():
        assert in_ledger.get(task) == who, (task, who, in_ledger.get(task))
    # A grant no client saw: a call the kill cut after its commit, one at most per cut claimer.
    unseen = Counter(who for task, who in in_ledger.items() if task not in acknowledged)
    assert set(unseen) <= set(cut) and set(unseen.values()) <= {1}, (unseen, cut)
    print(f"killed after {granted_before_kill} grants; {len(granted)} acknowledged; cut {sorted(cut)}; "
          f"granted unseen {dict(unseen)}")
    verify_receipts(bernstein_bin, tmp_path / "export", receipts, tmp_path)

    # The other instances still answer, alike, and nothing is left to claim.
    statuses = []
    for srv in servers[1:]:
        reply = call_tool(srv.direct_base, "bernstein_status", {}, version=HANDSHAKE, id_=99)
        assert reply.status == 200, reply.body[:300]
        statuses.append(normalised(reply))
    assert statuses[0] == statuses[1], statuses
    for srv in servers[1:]:
        late = call_tool(srv.direct_base, "bernstein_claim", {"claimer_id": "late"}, version=HANDSHAKE)
        assert late.status == 200 and payload(late)["granted"] is False, late.body[:300]


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
