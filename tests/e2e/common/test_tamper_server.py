"""The attacks of the security review, against real ledgers and real `bernstein mcp` processes.

An attacker with write access to `.sdd/` (but not the keys) edits the ledger by hand; the
server must refuse to serve what `bernstein audit verify` refuses, a cut tail must be provable
by a saved signed head, and a second instance with another key must say so. The workdir itself
is never edited: every attack runs on a copy.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from harness import ledger
from harness.launch import run_cli
from harness.payloads import ok_payload
from harness.raw import RawServer


@pytest.fixture
def store(launcher, workdir):
    """A ledger with a few runs, and the signed head a host saved at the end."""
    with RawServer.start(launcher, "fill") as srv:
        srv.initialize()
        first = ok_payload(srv.call_tool("bernstein_run", {"goal": "t1"})["result"])
        ok_payload(srv.call_tool("bernstein_run", {"goal": "tamper two"})["result"])
        ok_payload(srv.call_tool("bernstein_run_status", {"run_id": first["run_id"]})["result"])
        head = srv.request("resources/read", {"uri": "bernstein://ledger/head"})
        code, _ = srv.close()
        assert code == 0
    sdd = workdir / ".sdd"
    ledger.assert_verifies(sdd)
    text = head["result"]["contents"][0]["text"]
    signed = json.loads(text)
    assert signed["type"] == "bernstein.signed_head.v1"
    return sdd, ledger.ledger_lines(sdd), text, first["task_id"]


def serve(project):
    """Starts `bernstein mcp` on `project` with no client (EOF at once): 0 iff it would serve."""
    return run_cli(["mcp", "--workdir", str(project)], timeout=60)


def forged(prev: dict, stream_head: str, body: dict, stream: str) -> bytes:
    """A record made without the key: canonical, hash recomputed, no MAC."""
    rec = {
        "body": body,
        "kind": "task.status",
        "prev": prev["hash"],
        "seq": prev["seq"] + 1,
        "sprev": stream_head,
        "stream": stream,
        "txn": [1, 1],
    }
    pre = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    rec["hash"] = "sha256:" + hashlib.sha256(pre).hexdigest()
    return json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_keyless_forged_record_is_refused_by_server_and_verifier(store, tmp_path):
    sdd, lines, _, task = store
    copy = ledger.copy_store(sdd, tmp_path / "forged")
    last = json.loads(lines[-1].raw)
    heads = {}
    for ll in lines:
        r = json.loads(ll.raw)
        heads[r["stream"]] = r["hash"]
    body = {"actor": "mallory", "from": "open", "id": task, "to": "cancelled"}
    line = forged(last, heads["backlog"], body, "backlog")
    with open(copy / "ledger" / "ledger.jsonl", "ab") as f:
        f.write(line + b"\n")
    os_remove_checkpoint(copy)
    proc = ledger.audit_verify(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"ledger.jsonl:{len(lines) + 1} (seq {len(lines) + 1})" in proc.stdout, proc.stdout
    assert "HMAC tag missing" in proc.stdout
    served = serve(copy.parent)
    assert served.returncode != 0, served.stderr
    assert f"(seq {len(lines) + 1})" in served.stderr and "audit verify" in served.stderr, served.stderr


def os_remove_checkpoint(sdd):
    (sdd / "ledger" / "checkpoint.json").unlink(missing_ok=True)


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_same_length_edit_is_refused_at_open(store, tmp_path, where):
    sdd, lines, _, _ = store
    copy = ledger.copy_store(sdd, tmp_path / f"edit-{where}")
    assert (copy / "ledger" / "checkpoint.json").exists(), "the clean shutdown wrote a checkpoint"
    target = next(ll for ll in lines if b'"goal":"t1"' in ll.raw) if where == "first" else lines[-1]
    raw = target.raw.replace(b'"goal":"t1"', b'"goal":"t9"') if where == "first" else ledger.flip_byte(target.raw, 12)
    ledger.replace_line(copy / "ledger" / "ledger.jsonl", target.line_no, raw)
    assert ledger.audit_verify(copy).returncode == 1
    served = serve(copy.parent)
    assert served.returncode != 0
    assert f"ledger.jsonl:{target.line_no} (seq {target.seq})" in served.stderr, served.stderr


def test_a_cut_tail_is_refused_with_the_checkpoint_and_proven_by_a_witness_without(store, tmp_path):
    sdd, lines, head_text, _ = store
    copy = ledger.copy_store(sdd, tmp_path / "cut")
    path = copy / "ledger" / "ledger.jsonl"
    keep = len(lines) - 1
    path.write_bytes(b"".join(ll.raw + b"\n" for ll in lines[:keep]))
    served = serve(copy.parent)
    assert served.returncode != 0
    assert f"ends at seq {keep}" in served.stderr and f"records seq {len(lines)}" in served.stderr, served.stderr
    # The attacker deletes the checkpoint too: the shorter ledger is valid on its own, and the
    # server serves it and writes new records at the old sequence numbers.
    os_remove_checkpoint(copy)
    served = serve(copy.parent)
    assert served.returncode == 0, served.stderr
    witness = tmp_path / "head.json"
    witness.write_text(head_text)
    proc = run_cli(["audit", "verify", "--dir", str(copy), "--witness", str(witness)])
    assert proc.returncode == 1, proc.stdout
    assert "ledger rewritten or truncated after seq" in proc.stdout and str(witness) in proc.stdout, proc.stdout
    # The untouched ledger extends the same witness.
    proc = run_cli(["audit", "verify", "--dir", str(sdd), "--witness", str(witness)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "extends every witness" in proc.stdout


def test_a_second_instance_with_another_key_says_so_and_leaves_nothing(store, tmp_path):
    sdd, _, _, _ = store
    copy = ledger.copy_store(sdd, tmp_path / "other-key")
    os_remove_checkpoint(copy)
    (copy / "keys" / "audit.key").write_text("11" * 32 + "\n")
    served = serve(copy.parent)
    assert served.returncode != 0
    assert "audit key does not match the ledger's" in served.stderr and "copy .sdd/keys" in served.stderr, served.stderr
    # Without any key: refused, and no new key is made for a ledger that has records.
    shutil.rmtree(copy / "keys")
    (copy / "keys").mkdir(mode=0o700)
    served = serve(copy.parent)
    assert served.returncode != 0
    assert "copy .sdd/keys" in served.stderr, served.stderr
    assert not (copy / "keys" / "audit.key").exists()
