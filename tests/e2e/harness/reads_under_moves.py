"""Concurrent reads while the runs they read move: the stores place a read's audit record after
whatever head they find instead of refusing it, even when the run it read moved meanwhile; a
record placed later than right after the snapshot it was served from names it (`read_at`).

`reads_under_moves(bases)` polls four runs from 12 raw HTTP clients spread over the servers at
`bases` (one ledger) while a mover claims each run, posts an artifact on it, completes it and
approves it through the last server and makes new runs through the first (writes that name
what they read), and returns the calls made and the mover's claim receipts
(`verify_receipts` checks them offline: a claim placed after other calls' records still
verifies);
`check_audits(records, made)` then checks the ledger from outside: exactly one
`mcp.stateless_call` per call, and every read's record naming a run states that run's journal
head at the position it was served from (`read_at`, else right before the record).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections import Counter

from .http_raw import HANDSHAKE, call_tool

READERS = 12
CALLS = 40


def _payload(reply) -> dict:
    assert reply.status == 200, reply.body[:300]
    resp = reply.rpc_response()
    assert "result" in resp and not resp["result"].get("isError"), resp
    doc = json.loads(resp["result"]["content"][0]["text"])
    return doc.get("result", doc) if isinstance(doc, dict) else doc


def reads_under_moves(bases: list[str]) -> tuple[Counter[str], list[dict]]:
    """Runs the load; the calls made, by tool, and the claim receipts handed out."""
    made: Counter[str] = Counter()

    def call(base: str, tool: str, args: dict) -> dict:
        made[tool] += 1
        return _payload(call_tool(base, tool, args, version=HANDSHAKE))

    watched = [
        call(bases[n % len(bases)], "bernstein_run", {"goal": f"polled run {n}", "requires_approval": True})
        for n in range(4)
    ]
    errors: list[str] = []
    lock = threading.Lock()
    counts: Counter[str] = Counter()

    def reader(n: int) -> None:
        base = bases[n % len(bases)]
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
    # Meanwhile each polled run's journal moves four times, and new runs are made through the
    # first server (writes that name what they read, placed after the reads' records).
    receipts = []
    for n, run in enumerate(watched):
        claimed = call(bases[-1], "bernstein_claim", {"claimer_id": "mover", "role": "backend"})
        receipts.append(claimed)
        assert claimed["granted"] is True and claimed["taskId"] == run["task_id"], claimed
        task = run["task_id"]
        posted = call(bases[-1], "bernstein_post_artifact",
                      {"task_id": task, "key": f"{task}-notes", "kind": "report", "content": f"notes {n}"})
        assert posted["version"] == 1, posted
        done = call(bases[-1], "bernstein_complete", {"task_id": task, "result_summary": "moved under the reads"})
        assert done["status"] == "pending_approval", done
        approved = call(bases[-1], "bernstein_approve", {"task_id": task, "decision": "approve"})
        assert approved["status"] == "done", approved
        call(bases[0], "bernstein_run", {"goal": f"made under the reads {n}", "role": "other"})
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors[:3]
    assert sum(counts.values()) == READERS * CALLS
    made.update(counts)
    return made, receipts


def verify_receipts(bernstein_bin, project, receipts: list[dict], tmp_path) -> None:
    """Each receipt verifies offline (`bernstein backlog verify-claim`) against the ledger of
    the project directory `project`."""
    for n, receipt in enumerate(receipts):
        receipt_file = tmp_path / f"receipt-{n}.json"
        receipt_file.write_text(json.dumps(receipt))
        check = subprocess.run(
            [str(bernstein_bin), "backlog", "verify-claim", "--workdir", str(project), "--receipt", str(receipt_file)],
            capture_output=True, text=True,
        )
        assert check.returncode == 0, check.stdout + check.stderr


def check_audits(records: list[dict], made: Counter[str]) -> None:
    """One audit record per call, and each read's record true of the snapshot it was served from."""
    audits = [r for r in records if r["kind"] == "mcp.stateless_call"]
    assert Counter(a["body"]["tool"] for a in audits) == made
    history: dict[str, list[tuple[int, str]]] = {}
    moved = 0
    for r in records:
        body = r["body"]
        if r["kind"] == "mcp.stateless_call" and "run_id" in body and r["txn"] == [1, 1] and body["ok"]:
            served = body.get("read_at", r["seq"] - 1)
            assert served < r["seq"], (r["seq"], body)
            moved += "read_at" in body
            journal = [h for seq, h in history.get("run:" + body["run_id"], []) if seq <= served]
            assert journal and body["journal_head"] == journal[-1], (r["seq"], body)
        elif r["kind"] == "mcp.stateless_call" and r["txn"][1] > 1 and body["ok"]:
            check_write_audit(r, records)
        history.setdefault(r["stream"], []).append((r["seq"], r["hash"]))


def check_write_audit(audit: dict, records: list[dict]) -> None:
    """A write's call record placed after other records (`read_at`) still says true things: it
    names a snapshot before its own transaction, and the journal head of a run it wrote is the
    hash of that run's last record in the transaction."""
    first = audit["seq"] - audit["txn"][0] + 1
    txn = [r for r in records if first <= r["seq"] <= audit["seq"]]
    body = audit["body"]
    if "read_at" in body:
        assert body["read_at"] < first, (audit["seq"], body)
    if "run_id" in body:
        wrote = [r for r in txn if r["stream"] == "run:" + body["run_id"]]
        if wrote:
            assert body["journal_head"] == wrote[-1]["hash"], (audit["seq"], body)
