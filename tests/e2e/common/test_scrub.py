"""The scrub, against the real binary on both runtimes (docs/OPERATIONS.md, "The scrub").

An old record edited in place while a server runs (same length, so no size check notices) is
found by the background scrub within its interval: `/readyz` turns 503 with the reason, the
reason is logged once, and a tool call is refused with a clear error instead of being appended
after the bad record. A server whose ledger is left alone stays ready.
"""

from __future__ import annotations

import time

from harness.http_raw import call_tool, request
from harness.operator import wait_not_ready

SCRUB = {"BERNSTEIN_SCRUB_INTERVAL_SECS": "0.2"}



def test_an_edit_in_place_is_found_by_the_scrub(http_server, workdir):
    srv = http_server("scrub", env=SCRUB)
    base = srv.direct_base
    for i in range(5):
        assert "error" not in call_tool(base, "bernstein_run", {"goal": f"goal {i}"}, id_=i + 1).json()
    ledger = workdir / ".sdd" / "ledger" / "ledger.jsonl"
    # Stays ready over several passes while nobody touches the ledger.
    time.sleep(0.8)
    assert request(base, "GET", "/readyz").status == 200
    data = ledger.read_bytes()
    at = data.index(b"goal 1")
    with open(ledger, "r+b") as f:  # in place: the same file, the same size
        f.seek(at + 5)
        f.write(b"7")
    reply = wait_not_ready(base)
    assert reply.status == 503
    problem = reply.json()
    assert "no longer verifies" in problem["reason"] and "audit verify" in problem["reason"], problem
    assert problem["retryable"] is False
    size = ledger.stat().st_size
    refused = call_tool(base, "bernstein_run", {"goal": "after the edit"}, id_=99).json()
    assert "error" in refused and "no longer verifies" in refused["error"]["message"], refused
    assert ledger.stat().st_size == size, "nothing was appended after the bad record"
    log = srv.stderr_text()
    assert log.count("bernstein: scrub:") == 1, log
    # Put the byte back, so the suite's own check of every ledger at teardown passes.
    with open(ledger, "r+b") as f:
        f.seek(at + 5)
        f.write(data[at + 5:at + 6])
