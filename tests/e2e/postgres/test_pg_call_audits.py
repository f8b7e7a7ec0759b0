"""Reads over three PostgreSQL instances (issue 15): the audit record of a read (a call that
succeeded and wrote nothing) joins its instance's group commit and is sealed after whatever head the leader finds,
so concurrent reads on different instances never refuse each other. Seen from outside: every
call answers, the exported ledger verifies, it holds exactly one `mcp.stateless_call` per call,
and each read's audit record naming a run states the run journal's head where it stands, even
while that run's journal moves under the reads.
"""

from __future__ import annotations

import threading
from collections import Counter

from harness.http_raw import HANDSHAKE, call_tool
from pg_support import export_and_verify, payload

READERS = 12
CALLS = 40


def test_concurrent_reads_on_three_instances_are_each_audited_once(pg_servers, pg_url, workdir, bernstein_bin,
                                                                    tmp_path):
    servers = pg_servers(3, record=False)
    made: Counter[str] = Counter()

    def call(n: int, tool: str, args: dict) -> dict:
        reply = call_tool(servers[n % 3].direct_base, tool, args, version=HANDSHAKE, id_=n)
        assert reply.status == 200, reply.body[:300]
        made[tool] += 1
        return payload(reply)

    watched = [call(n, "bernstein_run", {"goal": f"polled run {n}"}) for n in range(4)]
    errors: list[str] = []
    lock = threading.Lock()
    counts: Counter[str] = Counter()

    def reader(n: int) -> None:
        base = servers[n % 3].direct_base
        for i in range(CALLS):
            tool, args = (
                ("bernstein_status", {}) if i % 5 == 4
                else ("bernstein_run_status", {"run_id": watched[(n + i) % 4]["run_id"]})
            )
            reply = call_tool(base, tool, args, version=HANDSHAKE, id_=i)
            with lock:
                if reply.status != 200 or "result" not in reply.rpc_response():
                    errors.append(f"{reply.status} {reply.body[:200]!r}")
                else:
                    counts[tool] += 1

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
    for t in threads:
        t.start()
    # Meanwhile each polled run's journal moves twice, through the third instance.
    for run in watched:
        claimed = call(2, "bernstein_claim", {"claimer_id": "mover"})
        assert claimed["granted"] is True and claimed["taskId"] == run["task_id"], claimed
        call(2, "bernstein_complete", {"task_id": run["task_id"], "result_summary": "moved under the reads"})
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors[:3]
    assert sum(counts.values()) == READERS * CALLS
    made.update(counts)

    records = export_and_verify(bernstein_bin, workdir, pg_url, tmp_path / "export")
    audits = [r for r in records if r["kind"] == "mcp.stateless_call"]
    assert Counter(a["body"]["tool"] for a in audits) == made
    heads: dict[str, str] = {}
    for r in records:
        heads[r["stream"]] = r["hash"]
        body = r["body"]
        if r["kind"] == "mcp.stateless_call" and "run_id" in body and r["txn"] == [1, 1] and body["ok"]:
            # A read: the journal head it states is the head where it stands.
            assert body["journal_head"] == heads.get("run:" + body["run_id"]), (r["seq"], body)
