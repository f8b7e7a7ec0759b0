"""`bernstein audit verify` against a ledger written by real server processes.

A clean ledger verifies (exit 0); a copy with one byte of one record flipped, or one record
removed, fails (exit 1) naming that exact entry: its file, its line and its sequence number.
The workdir itself is never edited (its own verification runs at teardown).
"""

from __future__ import annotations

import pytest

from harness import ledger
from harness.payloads import ok_payload
from harness.raw import RawServer


@pytest.fixture
def busy_store(launcher, workdir):
    """A ledger with several transactions: runs, a subtask, polls, a status call, a cancel."""
    with RawServer.start(launcher, "fill") as srv:
        srv.initialize()
        first = ok_payload(srv.call_tool("bernstein_run", {"goal": "audit fixture one"})["result"])
        ok_payload(srv.call_tool("bernstein_run", {"goal": "audit fixture two"})["result"])
        ok_payload(
            srv.call_tool("bernstein_run", {"goal": "child task", "parent_task_id": first["task_id"]})["result"]
        )
        ok_payload(srv.call_tool("bernstein_run_status", {"run_id": first["run_id"]})["result"])
        ok_payload(srv.call_tool("bernstein_status", {"detail": True})["result"])
        ok_payload(srv.call_tool("bernstein_cancel", {"task_id": first["task_id"], "reason": "audit"})["result"])
        code, _ = srv.close()
        assert code == 0
    sdd = workdir / ".sdd"
    ledger.assert_verifies(sdd)
    lines = ledger.ledger_lines(sdd)
    assert len(lines) >= 5, f"expected a record per write at least, found {len(lines)} ledger lines"
    assert [ll.seq for ll in lines] == list(range(1, len(lines) + 1)), "seq must count 1, 2, 3, ..."
    return sdd, lines


def pick(lines: list, which: str):
    return {"first": lines[0], "middle": lines[len(lines) // 2], "last": lines[-1]}[which]


def expect_named_failure(sdd, target) -> None:
    proc = ledger.audit_verify(sdd)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, f"tampered ledger: expected exit 1, got {proc.returncode}\n{output[-2000:]}"
    missing = ledger.names_entry(output, target.file, target.line_no, target.seq)
    assert not missing, (
        f"audit verify must name the bad entry ({target.file.name} line {target.line_no} seq {target.seq}); "
        f"it does not name {missing}:\n{output[-2000:]}"
    )


@pytest.mark.parametrize("which", ["first", "middle", "last"])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_flipped_byte_is_found_at_its_entry(busy_store, tmp_path, which, where):
    sdd, lines = busy_store
    target = pick(lines, which)
    index = {"start": 1, "middle": len(target.raw) // 2, "end": len(target.raw) - 2}[where]
    copy = ledger.copy_store(sdd, tmp_path / f"flip-{which}-{where}")
    copied_file = copy / target.file.relative_to(sdd)
    ledger.replace_line(copied_file, target.line_no, ledger.flip_byte(target.raw, index))
    expect_named_failure(copy, ledger.LedgerLine(copied_file, target.line_no, target.seq, target.raw))


@pytest.mark.parametrize("which", ["first", "middle"])
def test_edited_value_is_found_at_its_entry(busy_store, tmp_path, which):
    """A careful forger keeps the JSON valid and canonical and only changes one letter."""
    sdd, lines = busy_store
    target = pick(lines, which)
    needle = b'"kind":"'
    at = target.raw.index(needle) + len(needle)
    edited = bytearray(target.raw)
    edited[at] = ord("X") if edited[at] != ord("X") else ord("Y")
    copy = ledger.copy_store(sdd, tmp_path / f"edit-{which}")
    copied_file = copy / target.file.relative_to(sdd)
    ledger.replace_line(copied_file, target.line_no, bytes(edited))
    expect_named_failure(copy, ledger.LedgerLine(copied_file, target.line_no, target.seq, target.raw))


def test_removed_entry_is_detected(busy_store, tmp_path):
    sdd, lines = busy_store
    target = pick(lines, "middle")
    copy = ledger.copy_store(sdd, tmp_path / "removed")
    copied_file = copy / target.file.relative_to(sdd)
    ledger.replace_line(copied_file, target.line_no, None)
    proc = ledger.audit_verify(copy)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, f"a removed record must fail verification:\n{output[-2000:]}"
    assert copied_file.name in output, output[-2000:]


def test_swapped_entries_are_detected(busy_store, tmp_path):
    sdd, lines = busy_store
    a, b = lines[1], lines[2]
    if a.file != b.file:
        pytest.skip("records 2 and 3 live in different files")
    copy = ledger.copy_store(sdd, tmp_path / "swapped")
    copied_file = copy / a.file.relative_to(sdd)
    ledger.replace_line(copied_file, a.line_no, b.raw)
    ledger.replace_line(copied_file, b.line_no, a.raw)
    proc = ledger.audit_verify(copy)
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-2000:]


def test_clean_copy_verifies(busy_store, tmp_path):
    sdd, _ = busy_store
    copy = ledger.copy_store(sdd, tmp_path / "clean")
    ledger.assert_verifies(copy)
