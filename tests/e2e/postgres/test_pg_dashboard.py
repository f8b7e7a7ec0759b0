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


def test_the_dashboard_shows_what_a_database_ledger_knows(pg_servers, runtime):
    """On PostgreSQL the ledger has records, a head and a size (its table's, on disk): the API
    and the page, in Chromium, show them, none unknown; a claim made on one instance shows in
    the workers panel of another."""
    a, b = pg_servers(2)
    run = payload(call_tool(a.base, "bernstein_run", {"goal": "pg: a task to hold"}, id_=1))
    claim = payload(call_tool(a.base, "bernstein_claim", {"claimer_id": "pg-claimer"}, id_=2))
    assert claim["taskId"] == run["run_id"], claim
    ready = request(b.direct_base, "GET", "/readyz").json()
    ov = request(b.direct_base, "GET", "/api/overview").json()
    ledger = ov["ledger"]
    assert ledger["store"] == "postgres" and ledger["records"] == ready["records"], ledger
    assert ledger["head"] == ready["head"]
    assert isinstance(ledger["bytes"], int) and ledger["bytes"] > 0, ledger
    assert ledger["not_applicable"] == [], ledger
    rows = ov["workers"]["rows"]
    assert [(r["claimer"], r["task"]["id"]) for r in rows] == [("pg-claimer", run["run_id"])], rows

    from playwright.sync_api import sync_playwright

    from harness import browser as browser_harness

    with sync_playwright() as pw:
        chromium = browser_harness.launch(pw)
        t = browser_harness.Tab(chromium, f"pg-dashboard-{runtime}")
        try:
            t.page.goto(b.direct_base + "/")
            t.wait_attr(t.testid("conn-state"), "data-state", "live")
            t.wait_attr(t.testid("ledger-records"), "data-value", str(ready["records"]))
            assert t.text(t.testid("ledger-store")) == "postgres"
            assert t.text(t.testid("ledger-head")) == ready["head"]
            size = t.testid("ledger-bytes")
            assert t.text(size) not in ("not applicable", "unknown", "")
            assert t.attr(size, "data-applicable") == "true"
            assert "unknown" not in t.text(".ledger")
            t.wait_visible(t.testid("worker-row", claimer="pg-claimer"))
            t.screenshot("pg")
        finally:
            t.close()
            chromium.close()
