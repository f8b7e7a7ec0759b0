"""`bernstein audit verify` on a damaged ledger reports every bad line, not only the first, and
what each affects; it needs the audit key unless told `--no-keys`; `ledger export --with-keys`
refuses to export no keys.

A ledger written by a real server (runs, a claim with its signed receipt) is copied and damaged
the way an operator finds it: two goals edited by hand (the hashes left as they were), a line
deleted, the last line cut. The first line of the output stays what it always was (`FAILED:
file:line (seq N): reason`), the exit codes too (0 clean, 1 bad, 2 unreadable or no key).
The workdir itself is never edited.
"""

from __future__ import annotations

import json
import shutil

import pytest

from harness import ledger
from harness.launch import run_cli
from harness.payloads import ok_payload
from harness.raw import RawServer

GOALS = [f"findings goal {n}" for n in range(1, 7)]


@pytest.fixture
def store(launcher, workdir):
    """Six runs, then a claim (its receipt is recorded); the server closed (checkpoint written)."""
    runs = []
    with RawServer.start(launcher, "fill") as srv:
        srv.initialize()
        for goal in GOALS:
            runs.append(ok_payload(srv.call_tool("bernstein_run", {"goal": goal})["result"])["run_id"])
        ok_payload(srv.call_tool("bernstein_claim", {"claimer_id": "w1"})["result"])
        head = srv.request("resources/read", {"uri": "bernstein://ledger/head"})
        code, _ = srv.close()
        assert code == 0
    sdd = workdir / ".sdd"
    ledger.assert_verifies(sdd)
    (workdir.parent / "head.json").write_text(head["result"]["contents"][0]["text"])
    return sdd, ledger.ledger_lines(sdd), runs


def goal_line(lines, goal: str):
    """The `task.created` line that holds `goal`."""
    needle = json.dumps(goal).encode()
    return next(ll for ll in lines if b'"kind":"task.created"' in ll.raw and needle in ll.raw)


def verify(sdd, *extra):
    return run_cli(["audit", "verify", "--dir", str(sdd), *extra])


def verify_json(sdd, *extra) -> tuple[int, dict]:
    proc = verify(sdd, "--json", *extra)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"--json printed no JSON object (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.returncode, doc


def test_two_edited_goals_are_two_findings_human_and_json(store, tmp_path):
    sdd, lines, runs = store
    copy = ledger.copy_store(sdd, tmp_path / "two-edits")
    path = copy / "ledger" / "ledger.jsonl"
    first = goal_line(lines, GOALS[1])
    second = goal_line(lines, GOALS[5])
    assert second.line_no > first.line_no + 1
    for ll, goal in ((first, GOALS[1]), (second, GOALS[5])):
        edited = ll.raw.replace(json.dumps(goal).encode(), json.dumps(goal.upper()).encode())
        ledger.replace_line(path, ll.line_no, edited)

    proc = verify(copy)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    head = out.splitlines()[0]
    assert head == f"FAILED: {path}:{first.line_no} (seq {first.seq}): bad record: hash mismatch: record content was altered", out
    assert "2 findings" in out and "2 hash mismatch" in out, out
    for ll in (first, second):
        assert f"- line {ll.line_no} (seq {ll.seq}) [hash mismatch]" in out, out
    # Each names its run (the edited record and the rest of its transaction name it).
    assert runs[1] in out and runs[5] in out, out
    assert f"handles, receipts and witnesses over heads at or after seq {first.seq} no longer verify" in out, out
    assert "When the ledger does not verify" in out, out
    # --verbose changes nothing about a failure's report.
    assert verify(copy, "--verbose").stdout == out

    code, doc = verify_json(copy)
    assert code == 1
    assert doc["ok"] is False
    assert doc["failure"] == head.removeprefix("FAILED: ")
    assert [(f["line"], f["seq"], f["kind"]) for f in doc["findings"]] == [
        (first.line_no, first.seq, "hash_mismatch"),
        (second.line_no, second.seq, "hash_mismatch"),
    ], doc["findings"]
    assert doc["counts"] == {"hash_mismatch": 2}
    assert doc["from_seq"] == first.seq and doc["macs_checked"] is True
    assert doc["findings"][0]["affected"]["runs"] == [runs[1]]
    assert doc["findings"][1]["affected"]["runs"] == [runs[5]]
    assert set(doc["affected"]["runs"]) == {runs[1], runs[5]}
    assert doc["findings"][0]["record"]["kind"] == "task.created"
    # The claim came after both edits: its receipt is one of those that no longer verify.
    assert doc["claim_receipts_since"] == 1 and doc["findings"][1]["claim_receipts_since"] == 1


def test_a_deleted_line_is_one_finding(store, tmp_path):
    sdd, lines, _ = store
    target = lines[len(lines) // 2]
    copy = ledger.copy_store(sdd, tmp_path / "deleted")
    ledger.replace_line(copy / "ledger" / "ledger.jsonl", target.line_no, None)
    code, doc = verify_json(copy)
    assert code == 1
    assert [(f["line"], f["seq"], f["kind"]) for f in doc["findings"]] == [
        (target.line_no, target.seq, "missing_records")
    ], json.dumps(doc["findings"], indent=1)
    proc = verify(copy)
    assert proc.returncode == 1 and "1 finding in" in proc.stdout, proc.stdout


def test_a_truncated_last_line_is_one_finding(store, tmp_path):
    sdd, lines, _ = store
    copy = ledger.copy_store(sdd, tmp_path / "truncated")
    path = copy / "ledger" / "ledger.jsonl"
    path.write_bytes(path.read_bytes()[:-25])
    code, doc = verify_json(copy)
    assert code == 1
    kinds = [(f["line"], f["kind"]) for f in doc["findings"]]
    assert kinds == [(len(lines), "truncated")], json.dumps(doc["findings"], indent=1)
    assert "no newline" in doc["findings"][0]["reason"]
    proc = verify(copy)
    assert proc.returncode == 1 and f"ledger.jsonl:{len(lines)} (seq {len(lines)})" in proc.stdout, proc.stdout
    assert "cut short" in proc.stdout, proc.stdout


def test_without_the_key_verify_fails_unless_no_keys(store, tmp_path):
    sdd, lines, _ = store
    copy = ledger.copy_store(sdd, tmp_path / "keyless")
    shutil.rmtree(copy / "keys")
    proc = verify(copy)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot check the HMAC tags" in proc.stderr and "keys/audit.key" in proc.stderr, proc.stderr
    assert "--no-keys" in proc.stderr and "--with-keys" in proc.stderr, proc.stderr
    assert proc.stdout == ""

    proc = verify(copy, "--no-keys")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"OK: {len(lines)} records"), proc.stdout
    assert "HMAC tags NOT verified" in proc.stdout and "note: --no-keys" in proc.stdout, proc.stdout
    code, doc = verify_json(copy, "--no-keys")
    assert code == 0 and doc["ok"] is True and doc["macs_checked"] is False and doc["chains_only"] is True

    # Chains only on a damaged copy: still every finding, and it says the tags were not checked.
    target = lines[2]
    ledger.replace_line(copy / "ledger" / "ledger.jsonl", target.line_no, ledger.flip_byte(target.raw, 12))
    proc = verify(copy, "--no-keys")
    assert proc.returncode == 1, proc.stdout
    assert "HMAC tags NOT checked (--no-keys)" in proc.stdout, proc.stdout
    # --no-keys with the keys there: chains only all the same.
    proc = verify(sdd, "--no-keys")
    assert proc.returncode == 0 and "NOT verified" in proc.stdout, proc.stdout


def test_export_with_keys_and_no_keys_to_export_fails(tmp_path):
    """Checked before the database is reached: no server is needed to see the refusal."""
    plain = tmp_path / "not-a-project"
    plain.mkdir()
    out = tmp_path / "export"
    proc = run_cli(["--workdir", str(plain), "ledger", "export", "--store", "postgres://nobody@127.0.0.1:1/none",
                    "--out", str(out), "--with-keys"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--with-keys" in proc.stderr and "no audit key to export" in proc.stderr, proc.stderr
    assert "audit.key" in proc.stderr and "nothing was written" in proc.stderr, proc.stderr
    assert not out.exists(), "the refused export wrote something"


def test_a_saved_head_is_still_checked_on_a_bad_ledger(store, tmp_path, workdir):
    """A goal edited and the last transaction cut: both found; the signed head a host saved at
    the end proves the cut (the edit left every hash in place, so it alone would not)."""
    sdd, lines, _ = store
    witness = workdir.parent / "head.json"
    copy = ledger.copy_store(sdd, tmp_path / "edited-and-cut")
    path = copy / "ledger" / "ledger.jsonl"
    target = goal_line(lines, GOALS[0])
    edited = target.raw.replace(b"findings goal 1", b"findings goal 9")
    last_txn = max(ll.line_no for ll in lines if b'"txn":[1,' in ll.raw)
    kept = [edited if ll is target else ll.raw for ll in lines[: last_txn - 1]]
    path.write_bytes(b"".join(raw + b"\n" for raw in kept))
    proc = verify(copy, "--witness", str(witness))
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert f"- line {target.line_no} (seq {target.seq}) [hash mismatch]" in out, out
    assert f"- line {last_txn} (seq {last_txn}) [truncated]" in out and "checkpointed seq" in out, out
    assert f"witness {witness}: ledger rewritten or truncated after seq" in out, out
    code, doc = verify_json(copy, "--witness", str(witness))
    assert code == 1 and [w["ok"] for w in doc["witnesses"]] == [False], doc["witnesses"]
    # Only the edit: every hash the head binds is still in place, and the report says what that means.
    copy = ledger.copy_store(sdd, tmp_path / "edited")
    ledger.replace_line(copy / "ledger" / "ledger.jsonl", target.line_no, edited)
    proc = verify(copy, "--witness", str(witness))
    assert proc.returncode == 1, proc.stdout
    assert f"witness {witness}: every record it binds is still where it saw it" in proc.stdout, proc.stdout
