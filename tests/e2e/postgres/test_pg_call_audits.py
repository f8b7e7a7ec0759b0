"""Reads over three PostgreSQL instances (issue 15): the audit record of a read (a call that
succeeded and wrote nothing) joins its instance's group commit and is sealed after whatever
head the leader finds, so concurrent reads on different instances never refuse each other.
Seen from outside (harness/reads_under_moves.py): every call answers, the exported ledger
verifies, it holds exactly one `mcp.stateless_call` per call, and each read's audit record
naming a run states the run journal's head where it stands, even while that run's journal
moves under the reads.
"""

from __future__ import annotations

from harness.reads_under_moves import check_audits, reads_under_moves, verify_receipts
from pg_support import export_and_verify


def test_concurrent_reads_on_three_instances_are_each_audited_once(pg_servers, pg_url, workdir, bernstein_bin,
                                                                    tmp_path):
    servers = pg_servers(3, record=False)
    made, receipts = reads_under_moves([s.direct_base for s in servers])
    check_audits(export_and_verify(bernstein_bin, workdir, pg_url, tmp_path / "export"), made)
    verify_receipts(bernstein_bin, tmp_path / "export", receipts, tmp_path)
