"""The pull-worker loop end to end through the official SDK `mcp<2` (handshake era):
run (with subtasks and depends_on) -> claim (refused while a dependency is open, granted
after) -> post_message (a secret comes back redacted) -> complete -> approve, then every
receipt and the mailbox verify offline with the CLI, and a tampered receipt, mailbox line or
audit line fails with the failing check named.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import scenarios
from harness.launch import run_cli
from harness.ledger import copy_store, flip_byte, ledger_lines, replace_line
from harness.sdk_handshake import connect

pytestmark = pytest.mark.anyio

RECEIPT_FIELDS = {
    "taskId",
    "granted",
    "claimerId",
    "claimerCardFingerprint",
    "backlogHead",
    "filterDigest",
    "chainHead",
    "specRevision",
    "receiptHash",
    "signature",
    "signerPublicKeyPem",
    "pollToken",
}
ENTRY_FIELDS = {"seq", "prev_entry_hash", "entry_hash", "body_hash", "signature", "signer_public_key_pem"}
SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def verify_claim(receipt_file: Path, sdd: Path):
    return run_cli(["backlog", "verify-claim", "--receipt", str(receipt_file), "--dir", str(sdd)])


def mailbox_verify(sdd: Path, *extra: str):
    return run_cli(["mailbox", "verify", "--dir", str(sdd), *extra])


def save(tmp: Path, name: str, obj) -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


async def test_claim_progress_complete_approve_and_verify(launcher, workdir: Path, tmp_path: Path):
    async with connect(launcher, "worker") as (session, _):
        root = await scenarios.ok(session, "bernstein_run", {"goal": "Ship the health endpoint"})
        first = await scenarios.ok(
            session, "bernstein_run", {"goal": "Write the handler", "parent_task_id": root["task_id"]}
        )
        second = await scenarios.ok(
            session,
            "bernstein_run",
            {
                "goal": "Review the handler",
                "parent_task_id": root["task_id"],
                "depends_on": [first["task_id"]],
                "requires_approval": True,
            },
        )
        cycle = await scenarios.refused(
            session,
            "bernstein_run",
            {"goal": "loop", "parent_task_id": first["task_id"], "depends_on": [root["task_id"]]},
        )
        assert cycle["error"] == "dependency_cycle", cycle

        # The first claim gets the free subtask; the second is refused while it is open.
        granted = await scenarios.tool(session, "bernstein_claim", {"claimer_id": "worker-1"})
        receipt_a = granted.payload
        assert RECEIPT_FIELDS <= set(receipt_a), receipt_a
        assert receipt_a["granted"] is True and receipt_a["taskId"] == first["task_id"], receipt_a
        refusal = await scenarios.ok(session, "bernstein_claim", {"claimer_id": "worker-2"})
        assert refusal["granted"] is False and refusal["taskId"] == "", refusal
        assert refusal["signature"] and refusal["signerPublicKeyPem"].startswith("-----BEGIN PUBLIC KEY-----")

        # Progress: the secret never comes back, and is never stored.
        entry = await scenarios.ok(
            session,
            "bernstein_post_message",
            {"task_id": first["task_id"], "body": f"CI uses {SECRET} to push", "kind": "finding", "sender": "worker-1"},
        )
        assert ENTRY_FIELDS <= set(entry), entry
        assert SECRET not in json.dumps(entry)
        assert "[REDACTED:github_token]" in entry["body"], entry
        assert entry["redactions"] == 1 and entry["seq"] == 1, entry

        # A waiting parent cannot be completed by a worker.
        early = await scenarios.refused(
            session, "bernstein_complete", {"task_id": root["task_id"], "result_summary": "too early"}
        )
        assert early["error"] == "task_not_completable", early
        assert early["current_status"] == "waiting_for_subtasks", early
        assert early["completable_statuses"] == ["claimed", "in_progress", "open"], early

        done = await scenarios.ok(
            session, "bernstein_complete", {"task_id": first["task_id"], "result_summary": "Handler written"}
        )
        assert done["status"] == "done", done

        # The dependency is done: the gated task is granted now.
        receipt_b = await scenarios.ok(session, "bernstein_claim", {"claimer_id": "worker-2"})
        assert receipt_b["granted"] is True and receipt_b["taskId"] == second["task_id"], receipt_b
        pending = await scenarios.ok(
            session, "bernstein_complete", {"task_id": second["task_id"], "result_summary": "Reviewed"}
        )
        assert pending["status"] == "pending_approval", pending
        not_yet = await scenarios.refused(session, "bernstein_approve", {"task_id": root["task_id"]})
        assert not_yet["error"] == "task_not_awaiting_approval", not_yet
        assert not_yet["approvable_statuses"] == ["pending_approval"], not_yet
        approved = await scenarios.ok(
            session, "bernstein_approve", {"task_id": second["task_id"], "note": "Looks good"}
        )
        assert approved["status"] == "done", approved
        assert approved["resumed_parents"] == [{"task_id": root["task_id"], "status": "done"}], approved
        handle = await scenarios.ok(session, "bernstein_run_status", {"run_id": root["task_id"]})
        assert handle["status"] == "completed", handle

    sdd = workdir / ".sdd"
    assert SECRET not in "".join(l.raw.decode() for l in ledger_lines(sdd))
    files = {
        # The whole tool result text (meter envelope) is accepted as well as the bare receipt.
        "granted-a": save(tmp_path, "granted-a", granted.document),
        "refusal": save(tmp_path, "refusal", refusal),
        "granted-b": save(tmp_path, "granted-b", receipt_b),
    }
    for name, path in files.items():
        proc = verify_claim(path, sdd)
        assert proc.returncode == 0, f"{name}: {proc.stdout}{proc.stderr}"
        assert proc.stdout.startswith("OK:"), proc.stdout
    proc = mailbox_verify(sdd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert mailbox_verify(sdd, "--task", first["task_id"]).returncode == 0

    # A tampered receipt: any field.
    forged = dict(receipt_b, claimerId="worker-9")
    proc = verify_claim(save(tmp_path, "forged", forged), sdd)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "receipt hash check failed" in proc.stdout, proc.stdout
    resigned = dict(receipt_b, signature=refusal["signature"])
    proc = verify_claim(save(tmp_path, "resigned", resigned), sdd)
    assert proc.returncode == 1 and "signature check failed" in proc.stdout, proc.stdout
    assert verify_claim(tmp_path / "missing.json", sdd).returncode == 2

    # A tampered mailbox line (in a copy of the store).
    copy = copy_store(sdd, tmp_path / "mailbox-copy")
    line = next(l for l in ledger_lines(copy) if b'"mailbox.message"' in l.raw)
    replace_line(line.file, line.line_no, line.raw.replace(b"to push", b"to pull"))
    proc = mailbox_verify(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f":{line.line_no} (seq {line.seq})" in proc.stdout, proc.stdout

    # A tampered audit line: the claim entry of receipt_b.
    copy = copy_store(sdd, tmp_path / "audit-copy")
    line = next(
        l for l in ledger_lines(copy) if b'"task.claim_receipt"' in l.raw and receipt_b["receiptHash"].encode() in l.raw
    )
    replace_line(line.file, line.line_no, flip_byte(line.raw, line.raw.index(b'"worker-2"') + 2))
    proc = verify_claim(files["granted-b"], copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ledger check failed" in proc.stdout and f":{line.line_no} (seq {line.seq})" in proc.stdout, proc.stdout


async def test_concurrent_claimers_over_two_servers(launcher, workdir: Path):
    """Two server processes on one .sdd/: each task is granted to exactly one claimer."""
    async with connect(launcher, "setup") as (session, _):
        tasks = [
            (await scenarios.ok(session, "bernstein_run", {"goal": f"task {i}"}))["task_id"] for i in range(6)
        ]
    granted: dict[str, str] = {}
    async with connect(launcher, "a") as (a, _), connect(launcher, "b") as (b, _):
        for turn in range(8):
            for name, session in (("a", a), ("b", b)):
                r = await scenarios.ok(session, "bernstein_claim", {"claimer_id": f"{name}-{turn}"})
                if r["granted"]:
                    assert r["taskId"] not in granted, f"{r['taskId']} granted twice"
                    granted[r["taskId"]] = r["claimerId"]
                else:
                    assert r["taskId"] == "" and r["signature"], r
    assert sorted(granted) == sorted(tasks)


async def test_plan_decided_as_a_whole(launcher, workdir: Path):
    async with connect(launcher, "plan") as (session, _):
        plan = await scenarios.ok(session, "bernstein_run", {"goal": "A planned change", "plan": True})
        assert plan["status"] == "planned" and plan["plan_id"] == plan["task_id"], plan
        step = await scenarios.ok(
            session, "bernstein_run", {"goal": "step one", "parent_task_id": plan["task_id"]}
        )
        assert step["status"] == "planned", step
        refused = await scenarios.refused(session, "bernstein_approve", {"task_id": step["task_id"]})
        assert refused["error"] == "task_not_awaiting_approval" and "plan" in refused["hint"], refused
        claim = await scenarios.ok(session, "bernstein_claim", {"claimer_id": "w"})
        assert claim["granted"] is False, "planned tasks are never offered"

    shown = run_cli(["--workdir", str(workdir), "plan", "show", plan["task_id"], "--json"])
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    stale = run_cli(["--workdir", str(workdir), "plan", "approve", plan["task_id"], "--hash", "sha256:" + "0" * 64])
    assert stale.returncode == 3 and "409" in stale.stderr, stale.stderr
    approved = run_cli(["--workdir", str(workdir), "plan", "approve", plan["task_id"], "--hash", doc["hash"]])
    assert approved.returncode == 0, approved.stderr
    again = run_cli(["--workdir", str(workdir), "plan", "approve", plan["task_id"], "--hash", doc["hash"]])
    assert again.returncode == 3, "the plan changed (it was decided): the old hash is stale"

    async with connect(launcher, "after") as (session, _):
        claim = await scenarios.ok(session, "bernstein_claim", {"claimer_id": "w"})
        assert claim["granted"] is True and claim["taskId"] == step["task_id"], claim
    cancelled = run_cli(["--workdir", str(workdir), "task", "cancel", plan["task_id"], "--reason", "e2e", "--json"])
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    unknown = run_cli(["--workdir", str(workdir), "task", "cancel", "T-0123456789abcdef", "--json"])
    assert unknown.returncode == 1 and json.loads(unknown.stdout)["error"] == "unknown_task"
