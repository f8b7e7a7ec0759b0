"""The operator's HTTP surface beside MCP (docs/OPERATIONS.md), against real server processes
on both runtimes: the probes, the dashboard's API and live feed, who may see them, and the
read-only `bernstein dashboard`. Operator routes are asked directly (not through the recording
proxy, which validates JSON-RPC traffic only).
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

from harness import ledger
from harness.http_raw import MODERN, call_tool, request
from harness.launch import base_env
from harness.operator import Feed, start_dashboard
from harness.payloads import ok_payload

TOKEN = "operator-test-token-0123456789"


def get(base: str, path: str, token: str | None = None, **headers):
    h = dict(headers)
    if token:
        h["Authorization"] = f"Bearer {token}"
    return request(base, "GET", path, headers=h)


_IDS = itertools.count(1)


def run_goal(srv, goal: str, token: str | None = None) -> dict:
    reply = call_tool(srv.base, "bernstein_run", {"goal": goal}, token=token, id_=next(_IDS))
    return ok_payload(reply.rpc_response()["result"])


def last_hash(sdd: Path) -> str:
    return json.loads(ledger.ledger_lines(sdd)[-1].raw)["hash"]


def test_probes_and_overview_follow_the_ledger(http_server, workdir):
    srv = http_server("ops")
    base = srv.direct_base
    assert get(base, "/healthz").json() == {"status": "ok"}
    started = run_goal(srv, "operator overview goal")
    ready = get(base, "/readyz")
    assert ready.status == 200
    sdd = workdir / ".sdd"
    assert ready.json()["head"] == last_hash(sdd)
    assert ready.json()["records"] == len(ledger.ledger_lines(sdd))
    ov = get(base, "/api/overview?window=900").json()
    assert ov["window_s"] == 900
    assert ov["ledger"]["head"] == last_hash(sdd)
    assert ov["ledger"]["bytes"] == (sdd / "ledger" / "ledger.jsonl").stat().st_size
    assert ov["ledger"]["signed_head"]["type"] == "bernstein.signed_head.v1"
    [run] = [r for r in ov["runs"] if r["run_id"] == started["run_id"]]
    assert run["goal"] == "operator overview goal" and run["status"] == "working"
    assert run["tasks"][0]["id"] == started["task_id"]
    assert ov["calls"]["by_tool"]["bernstein_run"] == 1
    assert len(ov["calls"]["per_minute"]) == 15
    detail = get(base, f"/api/task?id={started['task_id']}").json()
    assert detail["task"]["goal"] == "operator overview goal" and detail["mailbox"] == []
    assert get(base, "/api/task?id=T-0000000000000000").status == 404
    assert get(base, "/api/overview?window=1").status == 400


def test_the_page_is_public_and_the_data_is_not(http_server):
    srv = http_server("ops-token", env={"BERNSTEIN_MCP_TOKEN": TOKEN})
    base = srv.direct_base
    run_goal(srv, "a secret goal", token=TOKEN)
    page = get(base, "/")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    for asset in ("/dashboard.js", "/dashboard-view.js", "/dashboard.css"):
        assert get(base, asset).status == 200
    for path in ("/api/overview", "/api/task?id=x", "/api/events", "/metrics", "/healthz", "/readyz"):
        refused = get(base, path)
        assert refused.status == 401, path
        assert b"a secret goal" not in refused.body
        assert get(base, path, token="wrong").status == 401, path
    ov = get(base, "/api/overview", token=TOKEN).json()
    assert any(r["goal"] == "a secret goal" for r in ov["runs"])
    feed = Feed(base)
    assert feed.status == 401
    feed.close()
    feed = Feed(base, token=TOKEN)
    assert feed.status == 200 and "text/event-stream" in feed.head
    feed.close()


def test_origin_rules_apply_to_the_api(http_server):
    srv = http_server("ops-origin")
    base = srv.direct_base
    evil = request(base, "POST", "/api/verify", b"{}", {"Origin": "http://evil.example"})
    assert evil.status == 403
    own = request(base, "POST", "/api/verify", b"{}", {"Origin": f"http://127.0.0.1:{srv.port}"})
    assert own.status == 200 and own.json()["kind"] == "unknown"
    assert request(base, "POST", "/api/verify", b"not json").status == 400
    assert request(base, "GET", "/api/verify").status == 405
    foreign_host = request(base, "GET", "/api/overview", headers={"Host": "evil.example"})
    assert foreign_host.status == 421


def test_the_feed_tells_every_head_move_including_other_writers(http_server, launcher, workdir):
    srv = http_server("ops-feed")
    feed = Feed(srv.direct_base)
    try:
        first = feed.next_head()
        assert first["records"] == 0
        run_goal(srv, "moves the head")
        moved = feed.next_head()
        assert moved["records"] > 0 and moved["head"] == last_hash(workdir / ".sdd")
        # Another process on the same .sdd/ (a stdio server) moves it too.
        line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "bernstein_run", "arguments": {"goal": "from stdio"}}})
        init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        subprocess.run(launcher.server_argv(), input=f"{init}\n{line}\n", text=True, capture_output=True,
                       timeout=60, env=base_env(), check=True)
        other = feed.next_head()
        assert other["records"] > moved["records"]
        assert other["head"] == last_hash(workdir / ".sdd")
    finally:
        feed.close()


def test_verify_box_checks_pasted_handles(http_server):
    srv = http_server("ops-verify")
    base = srv.direct_base
    run = run_goal(srv, "verify through the dashboard")
    status = call_tool(srv.base, "bernstein_run_status", {"run_id": run["run_id"]}, id_=next(_IDS)).rpc_response()
    pasted = json.dumps(status).encode()
    good = request(base, "POST", "/api/verify", pasted).json()
    assert good["kind"] == "run_handle" and good["valid"] is True, good
    # The structured handle (what the verifier finds first) and the text copy both altered.
    forged = pasted.replace(b'\\"working\\"', b'\\"completed\\"').replace(b'"working"', b'"completed"')
    assert forged.count(b"completed") >= 2
    bad = request(base, "POST", "/api/verify", forged).json()
    assert bad["kind"] == "run_handle" and bad["valid"] is False, bad


def test_readyz_is_503_on_a_ledger_that_does_not_verify(http_server, workdir, tmp_path):
    srv = http_server("ops-fill")
    run_goal(srv, "soon tampered")
    srv.stop()
    copy = ledger.tampered_copy(workdir / ".sdd", tmp_path / "tampered", b"soon tampered", b"soon tampereD")
    bad = http_server("ops-tampered", workdir=copy.parent, record=False)
    base = bad.direct_base
    assert get(base, "/healthz").status == 200
    ready = get(base, "/readyz")
    # Waiting does not help: no Retry-After, and the body says so.
    assert ready.status == 503 and not ready.headers.get("retry-after"), ready.headers
    assert ready.json()["retryable"] is False, ready.body
    assert "corrupt" in ready.json()["reason"] and "ledger.jsonl:" in ready.json()["reason"]
    assert get(base, "/api/overview").status == 503
    # Not a 503 (which a handshake-era client reports without its body): the era's own rules,
    # a 200 there and a 500 in the stateless era, so the reason reaches the user.
    stateless = call_tool(base, "bernstein_status", {}, version=MODERN)
    assert stateless.status == 500 and not stateless.headers.get("retry-after"), stateless.headers
    assert stateless.rpc_response()["error"]["data"]["retryable"] is False
    answer = call_tool(base, "bernstein_status", {})
    assert answer.status == 200 and not answer.headers.get("retry-after"), answer.headers
    refused = answer.rpc_response()
    assert refused["error"]["code"] == -32603 and "corrupt" in refused["error"]["message"]
    assert refused["error"]["data"] == {"reason": "ledger_unavailable", "retryable": False}, refused
    assert "retry later" not in refused["error"]["message"] and "operator" in refused["error"]["message"]
    # The store's whole reason, with what to run and what to do, reaches the client.
    assert "bernstein audit verify" in refused["error"]["message"] and "restart the server" in refused["error"]["message"]
    assert "NOT READY" in bad.stderr_text()
    bad.stop()
    good = http_server("ops-clean")
    assert get(good.direct_base, "/readyz").status == 200


def test_readyz_is_503_once_the_ledger_is_replaced_under_the_server(http_server, workdir):
    srv = http_server("ops-replaced")
    run_goal(srv, "before the swap")
    base = srv.direct_base
    assert get(base, "/readyz").status == 200
    path = workdir / ".sdd" / "ledger" / "ledger.jsonl"
    copy = path.with_name("ledger.copy")
    copy.write_bytes(path.read_bytes())
    copy.replace(path)  # same bytes, another file: the server's handle no longer names it
    ready = get(base, "/readyz")
    assert ready.status == 503 and not ready.headers.get("retry-after"), ready.headers
    assert ready.json()["retryable"] is False and "replaced" in ready.json()["reason"], ready.body
    refused = call_tool(base, "bernstein_run", {"goal": "after the swap"}).rpc_response()
    assert refused["error"]["data"] == {"reason": "ledger_unavailable", "retryable": False}, refused
    assert "restart the server" in refused["error"]["message"]
    assert b"after the swap" not in path.read_bytes()


def test_the_dashboard_command_is_read_only(http_server, bernstein_bin, workdir, runtime, tmp_path):
    srv = http_server("ops-beside")
    run_goal(srv, "seen by the dashboard")
    sdd = workdir / ".sdd"
    size = (sdd / "ledger" / "ledger.jsonl").stat().st_size
    proc, base = start_dashboard(bernstein_bin, workdir, runtime, tmp_path / "dashboard.log")
    try:
        ov = get(base, "/api/overview").json()
        assert ov["server"]["read_only"] is True
        assert any(r["goal"] == "seen by the dashboard" for r in ov["runs"])
        assert get(base, "/readyz").status == 200
        assert get(base, "/").status == 200
        assert request(base, "POST", "/mcp", b"{}", {"Content-Type": "application/json"}).status == 404
        feed = Feed(base)
        feed.next_head()
        run_goal(srv, "written beside it")
        assert feed.next_head()["head"] == last_hash(sdd)
        feed.close()
        grown = (sdd / "ledger" / "ledger.jsonl").stat().st_size
        for _ in range(5):
            get(base, "/api/overview")
            get(base, "/metrics")
        assert (sdd / "ledger" / "ledger.jsonl").stat().st_size == grown > size
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_dashboard_command_refuses_a_directory_without_a_project(bernstein_bin, tmp_path):
    empty = tmp_path / "nothing"
    empty.mkdir()
    done = subprocess.run([str(bernstein_bin), "dashboard", "--workdir", str(empty), "--port", "0"],
                          capture_output=True, text=True, timeout=30, env=base_env())
    assert done.returncode == 2 and "not a Bernstein project" in done.stderr
    assert not (empty / ".sdd").exists()


@pytest.mark.parametrize("path", ["/api/overview?window=abc", "/api/task"])
def test_malformed_queries_are_400(http_server, path):
    srv = http_server("ops-bad")
    reply = get(srv.direct_base, path)
    assert reply.status == 400 and reply.json()["error"] == "bad_request"
