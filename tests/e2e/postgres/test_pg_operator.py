"""Operator commands on a PostgreSQL instance's workdir (issue 13, the first run): `status`,
`plan`, `task cancel`, `audit verify`, `mailbox verify` and `backlog verify-claim` take
`--store URL` (or `BERNSTEIN_STORE_URL`) as `mcp` does, read the database's ledger with the
keys of the workdir, and without it refuse the workdir (which holds no ledger) instead of
showing an empty project.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.http_raw import HANDSHAKE, call_tool
from harness.launch import base_env
from pg_support import payload, psql


def cli(bin_: Path, workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_), "--workdir", str(workdir), *args],
        capture_output=True, text=True, env=base_env(env), timeout=120,
    )


def test_operator_commands_take_store(pg_servers, pg_url, bernstein_bin, workdir, tmp_path):
    (srv,) = pg_servers(1)
    task = payload(call_tool(srv.direct_base, "bernstein_run", {"goal": "listed by status --store"}, version=HANDSHAKE))
    task_id = task["task_id"]

    # Without --store the workdir (keys only) is refused, naming the flag; nothing is created.
    bare = cli(bernstein_bin, workdir, "status")
    assert bare.returncode == 2, bare.stdout + bare.stderr
    assert "--store" in bare.stderr, bare.stderr
    assert not (workdir / ".sdd" / "ledger").exists()

    for how in (["--store", pg_url], []):
        env = None if how else {"BERNSTEIN_STORE_URL": pg_url}
        shown = cli(bernstein_bin, workdir, "status", "--json", *how, env=env)
        assert shown.returncode == 0, shown.stderr
        assert task_id in shown.stdout, shown.stdout
    listed = cli(bernstein_bin, workdir, "plan", "list", "--json", "--store", pg_url)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"plans": []}

    receipt = payload(call_tool(srv.direct_base, "bernstein_claim", {"claimer_id": "pg-operator"}, version=HANDSHAKE))
    assert receipt.get("taskId") == task_id, receipt
    receipt_file = tmp_path / "receipt.json"
    receipt_file.write_text(json.dumps(receipt))

    cancelled = cli(bernstein_bin, workdir, "task", "cancel", task_id, "--reason", "operator", "--store", pg_url)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    # The server sees the operator's decision: it went into the shared database.
    status = payload(call_tool(srv.direct_base, "bernstein_status", {"detail": True}, version=HANDSHAKE))
    assert [t["status"] for t in status["tasks"] if t["id"] == task_id] == ["cancelled"], status

    rows = int(psql(pg_url, "SELECT count(*) FROM bernstein_ledger"))
    audit = cli(bernstein_bin, workdir, "audit", "verify", "--store", pg_url)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert f"{rows} " in audit.stdout and "mac" in audit.stdout.lower(), (rows, audit.stdout)
    mailbox = cli(bernstein_bin, workdir, "mailbox", "verify", "--store", pg_url)
    assert mailbox.returncode == 0, mailbox.stdout + mailbox.stderr
    claim = cli(bernstein_bin, workdir, "backlog", "verify-claim", "--receipt", str(receipt_file), "--store", pg_url)
    assert claim.returncode == 0, claim.stdout + claim.stderr

    # The verifiers read the database, not a file: a record altered in it fails them (exit 1).
    seq = psql(pg_url, "SELECT min(seq) FROM bernstein_ledger WHERE convert_from(line, 'UTF8') LIKE '%listed by status --store%'")
    original = psql(pg_url, f"SELECT encode(line, 'hex') FROM bernstein_ledger WHERE seq = {seq}")
    psql(pg_url, "UPDATE bernstein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'), "
                 f"'listed by status', 'forged by status'), 'UTF8') WHERE seq = {seq}")
    try:
        for args in (["audit", "verify"], ["mailbox", "verify"],
                     ["backlog", "verify-claim", "--receipt", str(receipt_file)]):
            bad = cli(bernstein_bin, workdir, *args, "--store", pg_url)
            assert bad.returncode == 1, (args, bad.stdout, bad.stderr)
            assert "FAILED" in bad.stdout, (args, bad.stdout)
    finally:
        psql(pg_url, f"UPDATE bernstein_ledger SET line = decode('{original}', 'hex') WHERE seq = {seq}")


def test_store_flag_needs_the_instances_keys(pg_url, bernstein_bin, tmp_path):
    """A workdir without the instances' audit key is refused for --store, and no key is made."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    for args in (["status"], ["plan", "list"], ["task", "cancel", "T-0123456789abcdef"]):
        done = cli(bernstein_bin, empty, *args, "--store", pg_url)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "audit key" in done.stderr, done.stderr
    assert list(empty.iterdir()) == []
    unreachable = cli(bernstein_bin, empty, "audit", "verify", "--store", "postgres://nobody@127.0.0.1:1/none")
    assert unreachable.returncode == 2, unreachable.stdout + unreachable.stderr
