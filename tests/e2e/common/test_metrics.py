"""`GET /metrics` (Prometheus text format 0.0.4) on both runtimes, read with the reference
parser (`prometheus_client`): after a scripted load over both eras the counters equal exactly
the calls made (per tool, era and outcome), the duration histograms count every call, the
ledger gauges equal what is on disk and the tasks gauge equals what `bernstein_status`
reports. A long poll shows as a wait in flight while it waits. With a bearer token configured
the route is refused without it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from harness.http_raw import HANDSHAKE, MODERN, call_tool, request, rpc, rpc_headers

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (tool, arguments, era, the outcome label the call must be counted under)
SCRIPT = [
    ("bernstein_run", {"goal": "metrics run one"}, HANDSHAKE, "ok"),
    ("bernstein_run", {"goal": "metrics run two"}, HANDSHAKE, "ok"),
    ("bernstein_run", {"goal": "metrics run three"}, MODERN, "ok"),
    ("bernstein_run", {"goal": 5}, HANDSHAKE, "invalid_arguments"),
    ("no_such_tool", {}, MODERN, "unknown_tool"),
    ("bernstein_status", {}, HANDSHAKE, "ok"),
    ("bernstein_status", {}, MODERN, "ok"),
    ("bernstein_status", {}, HANDSHAKE, "ok"),
    ("bernstein_status", {}, MODERN, "ok"),
    ("bernstein_status", {}, HANDSHAKE, "ok"),
]


def scrape(base: str, token: str | None = None) -> dict:
    """Every sample of /metrics by (sample name, sorted labels), checking the content type."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reply = request(base, "GET", "/metrics", headers=headers)
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert reply.headers.get("content-type") == CONTENT_TYPE, reply.headers
    samples = {}
    for family in text_string_to_metric_families(reply.body.decode("utf-8")):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in samples, f"duplicate series {key}"
            samples[key] = s.value
    return samples


def series(samples: dict, name: str) -> dict:
    """The samples named `name`, by their labels (as dicts turned into sorted tuples)."""
    return {labels: v for (n, labels), v in samples.items() if n == name}


def one(samples: dict, name: str, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    assert key in samples, f"no {key}; have {sorted(k for k in samples if k[0] == name)}"
    return samples[key]


def payload(reply) -> dict:
    doc = json.loads(reply.rpc_response()["result"]["content"][0]["text"])
    return doc["result"] if "_meter" in doc else doc


def test_counters_match_the_calls_made(http_server, workdir: Path):
    srv = http_server("metrics")
    init = rpc(srv.base, "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                        "clientInfo": {"name": "metrics-e2e", "version": "0"}})
    assert init.rpc_response()["result"]["protocolVersion"] == HANDSHAKE
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert request(srv.base, "POST", "/mcp", json.dumps(note).encode(), rpc_headers(note)).status == 202
    for i, (tool, args, era, outcome) in enumerate(SCRIPT, start=2):
        reply = call_tool(srv.base, tool, args, version=era, id_=i).rpc_response()
        refused = "error" in reply or reply["result"].get("isError") is True
        assert refused == (outcome != "ok"), (tool, args, reply)
    assert "result" in rpc(srv.base, "tools/list", version=MODERN, id_=90).rpc_response()
    assert rpc(srv.base, "made/up", version=HANDSHAKE, id_=91).rpc_response()["error"]["code"] == -32601
    status = payload(call_tool(srv.base, "bernstein_status", {}, version=HANDSHAKE, id_=92))
    calls = SCRIPT + [("bernstein_status", {}, HANDSHAKE, "ok")]

    samples = scrape(srv.direct_base)

    expected_calls = Counter(
        (("era", era), ("outcome", outcome), ("tool", tool if tool.startswith("bernstein_") else "unknown"))
        for tool, _, era, outcome in calls
    )
    assert series(samples, "bernstein_tool_calls_total") == dict(expected_calls)
    requests = {dict(k)["method"]: v for k, v in series(samples, "bernstein_requests_total").items()}
    assert {m: v for m, v in requests.items() if v} == {
        "initialize": 1, "tools/call": len(calls), "tools/list": 1, "other": 1}, requests
    assert requests["ping"] == 0

    per_tool = Counter(dict(labels)["tool"] for labels in expected_calls.elements())
    counts = {dict(k)["tool"]: v for k, v in series(samples, "bernstein_tool_call_duration_seconds_count").items()}
    assert counts == dict(per_tool)
    for tool, n in per_tool.items():
        buckets = sorted(
            (float(dict(k)["le"]), v)
            for k, v in series(samples, "bernstein_tool_call_duration_seconds_bucket").items()
            if dict(k)["tool"] == tool
        )
        assert buckets[-1] == (float("inf"), n), buckets
        assert [v for _, v in buckets] == sorted(v for _, v in buckets), "buckets are cumulative"
        assert one(samples, "bernstein_tool_call_duration_seconds_sum", tool=tool) > 0

    lines = (workdir / ".sdd/ledger/ledger.jsonl").read_bytes().splitlines()
    assert one(samples, "bernstein_ledger_records") == len(lines)
    assert one(samples, "bernstein_ledger_bytes") == (workdir / ".sdd/ledger/ledger.jsonl").stat().st_size
    tasks = {dict(k)["status"]: v for k, v in series(samples, "bernstein_tasks").items()}
    assert tasks == {k: v for k, v in status["counts"].items() if k != "total"}, (tasks, status)
    assert tasks["open"] == 3

    # The scrape answered from a durable ledger: every byte of it is covered by an fsync.
    assert one(samples, "bernstein_ledger_durable_bytes") == (workdir / ".sdd/ledger/ledger.jsonl").stat().st_size
    # Every call appended one transaction, one call at a time: one append per fsync.
    assert one(samples, "bernstein_group_commit_batch_appends_count") == len(calls)
    assert one(samples, "bernstein_group_commit_batch_appends_bucket", le="1") == len(calls)
    assert one(samples, "bernstein_ledger_fsync_duration_seconds_count") >= len(calls)
    assert one(samples, "bernstein_requests_in_flight") == 0
    assert one(samples, "bernstein_waits_in_flight") == 0
    assert one(samples, "bernstein_http_connections_open") >= 1  # the scrape's own connection
    started = one(samples, "bernstein_process_start_time_seconds")
    assert time.time() - 600 < started <= time.time()


def test_a_long_poll_is_a_wait_in_flight(http_server):
    srv = http_server("metrics-wait", tier="standard")
    run = payload(call_tool(srv.base, "bernstein_run", {"goal": "wait on me"}, id_=1))
    done = threading.Event()

    def poll() -> None:
        try:
            call_tool(srv.base, "bernstein_run_status", {"run_id": run["run_id"], "wait_ms": 3000}, id_=2)
        finally:
            done.set()

    waiter = threading.Thread(target=poll)
    waiter.start()
    seen = False
    while not done.is_set() and not seen:
        s = scrape(srv.direct_base)
        seen = one(s, "bernstein_waits_in_flight") == 1 and one(s, "bernstein_requests_in_flight") == 1
    waiter.join()
    assert seen, "the long poll never showed as a wait in flight"
    after = scrape(srv.direct_base)
    assert one(after, "bernstein_waits_in_flight") == 0
    assert one(after, "bernstein_tool_calls_total", tool="bernstein_run_status", era=HANDSHAKE, outcome="ok") == 1


def test_metrics_need_the_token_when_one_is_set(http_server):
    token = "metrics-token-77"
    srv = http_server("metrics-auth", env={"BERNSTEIN_MCP_TOKEN": token}, record=False)
    refused = request(srv.direct_base, "GET", "/metrics")
    assert refused.status == 401, (refused.status, refused.body)
    assert refused.json()["error"] == "unauthorized"
    wrong = request(srv.direct_base, "GET", "/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401 and wrong.json()["error"] == "invalid_token"
    assert one(scrape(srv.direct_base, token), "bernstein_requests_in_flight") == 0
