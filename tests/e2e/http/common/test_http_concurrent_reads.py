"""Reads through two server processes on one `.sdd/` ledger (issue 15): the file store places a
read's audit record after the head it finds under its lock instead of refusing it, unless the
run the read answered about moved meanwhile. Seen from outside (harness/reads_under_moves.py):
every call answers, the ledger verifies (the `workdir` fixture), it holds exactly one
`mcp.stateless_call` per call, and each read's audit record naming a run states that run's
journal head where it stands, while those journals move under the reads. Both runtimes, and
one process of each.
"""

from __future__ import annotations

import json

import pytest

from harness.reads_under_moves import check_audits, reads_under_moves, verify_receipts


@pytest.mark.parametrize("pair", ["same", "mixed"])
def test_concurrent_reads_are_each_audited_once_and_truthfully(http_server, runtime, workdir, pair, bernstein_bin,
                                                              tmp_path):
    other = runtime if pair == "same" else ("smol" if runtime == "std" else "std")
    a = http_server("reads-a", record=False)
    b = http_server("reads-b", record=False, runtime=other)
    made, receipts = reads_under_moves([a.direct_base, b.direct_base])
    ledger = workdir / ".sdd" / "ledger" / "ledger.jsonl"
    records = [json.loads(line) for line in ledger.read_bytes().splitlines()]
    check_audits(records, made)
    verify_receipts(bernstein_bin, workdir, receipts, tmp_path)
