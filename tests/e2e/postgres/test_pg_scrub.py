"""The scrub on PostgreSQL, against the real binary on both runtimes (docs/OPERATIONS.md, "The
scrub"; the file-store version is common/test_scrub.py).

An old ledger row whose `line` is UPDATEd in place with SQL while a server runs (its `seq` and
`hash` columns left alone, so the database's constraints accept it) is found by the background
scrub within its interval: `/readyz` turns 503 with the reason, the reason is logged once, and a
tool call is refused with a clear error instead of being appended after the bad record. A server
whose ledger is left alone stays ready.
"""

from __future__ import annotations

import time

from harness.http_raw import call_tool, request
from harness.operator import wait_not_ready

from pg_support import psql

SCRUB = {"BERNSTEIN_SCRUB_INTERVAL_SECS": "1"}



def test_a_row_edited_in_place_is_found_by_the_scrub(pg_servers, pg_url):
    (srv,) = pg_servers(1, env=SCRUB)
    base = srv.direct_base
    for i in range(5):
        assert "error" not in call_tool(base, "bernstein_run", {"goal": f"goal {i}"}, id_=i + 1).json()
    # Stays ready over several passes while nobody touches the ledger.
    time.sleep(2.5)
    assert request(base, "GET", "/readyz").status == 200
    assert "bernstein: scrub:" not in srv.stderr_text()
    seq, original = psql(
        pg_url,
        "SELECT seq, encode(line, 'hex') FROM bernstein_ledger"
        " WHERE position('goal 1' in convert_from(line, 'UTF8')) > 0 ORDER BY seq LIMIT 1",
    ).split("|")
    # In place, the same length, the seq and hash columns untouched: the constraints accept it.
    psql(
        pg_url,
        "UPDATE bernstein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'),"
        f" 'goal 1', 'goal 7'), 'UTF8') WHERE seq = {seq}",
    )
    records = int(psql(pg_url, "SELECT count(*) FROM bernstein_ledger"))
    reply = wait_not_ready(base)
    assert reply.status == 503
    problem = reply.json()
    reason = problem["reason"]
    assert f"postgres:bernstein_ledger line {seq} (record {seq}) no longer verifies" in reason, problem
    assert "audit verify --store" in reason, problem
    assert problem["retryable"] is False
    refused = call_tool(base, "bernstein_run", {"goal": "after the edit"}, id_=99).json()
    assert "error" in refused and "no longer verifies" in refused["error"]["message"], refused
    assert int(psql(pg_url, "SELECT count(*) FROM bernstein_ledger")) == records, "nothing was appended"
    log = srv.stderr_text()
    assert log.count("bernstein: scrub:") == 1, log
    assert f"record {seq}) no longer verifies" in log, log
    # Put the row back, so the export at teardown verifies.
    psql(pg_url, f"UPDATE bernstein_ledger SET line = decode('{original}', 'hex') WHERE seq = {seq}")
