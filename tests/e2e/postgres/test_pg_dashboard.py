"""The operator's routes on instances sharing one PostgreSQL database: a head moved by one
instance reaches the dashboard feed of another, the verify box replays the database's ledger,
and `bernstein dashboard --store URL` shows it read-only.
"""

from __future__ import annotations

import json

from harness.http_raw import call_tool, request
from harness.operator import Feed, start_dashboard

from pg_support import payload


def test_the_feed_and_the_verify_box_span_instances(pg_servers, pg_url, bernstein_bin, workdir, runtime, tmp_path):
    a, b = pg_servers(2)
    feed = Feed(b.direct_base)
    try:
        start = feed.next_head()
        run = payload(call_tool(a.base, "bernstein_run", {"goal": "written on instance a"}, id_=1))
        moved = feed.next_head()
        assert moved["records"] > start["records"]
    finally:
        feed.close()
    ov = request(b.direct_base, "GET", "/api/overview").json()
    assert ov["ledger"]["store"] == "postgres" and ov["ledger"]["head"] == moved["head"]
    assert any(r["goal"] == "written on instance a" for r in ov["runs"])
    status = call_tool(a.base, "bernstein_run_status", {"run_id": run["run_id"]}, id_=2).rpc_response()
    verdict = request(b.direct_base, "POST", "/api/verify", json.dumps(status).encode()).json()
    assert verdict["kind"] == "run_handle" and verdict["valid"] is True, verdict

    proc, base = start_dashboard(bernstein_bin, workdir, runtime, tmp_path / "dash.log", ["--store", pg_url])
    try:
        ov = request(base, "GET", "/api/overview").json()
        assert ov["server"]["read_only"] is True and ov["ledger"]["store"] == "postgres"
        assert any(r["goal"] == "written on instance a" for r in ov["runs"])
        assert request(base, "GET", "/readyz").status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)
