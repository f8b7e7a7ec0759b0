"""Approvals asked of a person through the host (`bernstein_approve` without a decision): the
ledger facts the tests of every SDK check, read from `.sdd/` after the server wrote them.

A decision is one transaction holding the tasks' `task.status` records, the `operator.command`
entry (`plan approve|reject` with the plan's hash, as the CLI writes it) and the call's
`mcp.stateless_call` audit record (`tool: bernstein_approve`, with the principal when the call
carried an access token). `bernstein audit verify --verbose` lists that call.
"""

from __future__ import annotations

import json
from pathlib import Path

from .launch import run_cli

# The form's fields, as the host shows them.
APPROVE = {"decision": "approve", "note": "looks right"}
REJECT = {"decision": "reject", "note": "too broad"}


def ledger_file(workdir: Path) -> Path:
    return workdir / ".sdd" / "ledger" / "ledger.jsonl"


def ledger_bytes(workdir: Path) -> bytes:
    path = ledger_file(workdir)
    return path.read_bytes() if path.exists() else b""


def records(workdir: Path) -> list[dict]:
    return [json.loads(line) for line in ledger_bytes(workdir).splitlines() if line.strip()]


def transactions(workdir: Path) -> list[list[dict]]:
    out: list[list[dict]] = []
    for rec in records(workdir):
        if rec["txn"][0] <= 1:
            out.append([])
        out[-1].append(rec)
    return out


def statuses(workdir: Path) -> dict[str, str]:
    """Each task's status as the backlog last recorded it."""
    now: dict[str, str] = {}
    for rec in records(workdir):
        if rec["kind"] == "task.created":
            now[rec["body"]["task_id"]] = rec["body"]["status"]
        elif rec["kind"] == "task.status":
            now[rec["body"]["task_id"]] = rec["body"]["to"]
    return now


def decisions(workdir: Path) -> list[list[dict]]:
    """The transactions that hold an `operator.command` (plan decisions)."""
    return [t for t in transactions(workdir) if any(r["kind"] == "operator.command" for r in t)]


def the_decision(workdir: Path, plan_id: str, command: str, plan_hash: str) -> dict:
    """The one recorded decision of `plan_id`: checks it is `command` on `plan_hash`, taken by
    a `bernstein_approve` call in the same transaction; returns that call's audit body."""
    [txn] = decisions(workdir)
    [cmd] = [r["body"] for r in txn if r["kind"] == "operator.command"]
    assert cmd["command"] == command and cmd["target"] == plan_id, cmd
    assert cmd["plan_hash"] == plan_hash, (cmd, plan_hash)
    [call] = [r["body"] for r in txn if r["kind"] == "mcp.stateless_call"]
    assert call["tool"] == "bernstein_approve" and call["ok"] is True, call
    return call


def verify_verbose(workdir: Path) -> str:
    proc = run_cli(["audit", "verify", "--verbose", "--dir", str(workdir / ".sdd")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def approve_calls(verbose: str) -> list[str]:
    """The `bernstein_approve` lines of `audit verify --verbose`."""
    return [line for line in verbose.splitlines() if "bernstein_approve" in line]


def assert_approved(workdir: Path, ids: list[str]) -> None:
    now = statuses(workdir)
    # The root waits for its subtasks; every other task of the plan is open for workers.
    assert now[ids[0]] == "waiting_for_subtasks", now
    for task in ids[1:]:
        assert now[task] == "open", now


def assert_rejected(workdir: Path, ids: list[str]) -> None:
    now = statuses(workdir)
    for task in ids:
        assert now[task] == "cancelled", now
