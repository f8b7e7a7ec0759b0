"""Cancellation over HTTP: a long poll of `bernstein_run_status` (and a blocking
`tasks/result`) waiting on one connection is ended by a `notifications/cancelled` POSTed on
another, and answers `{content, cancelled: true, partial: [...]}` without `isError`; closing the
connection of a waiting request cancels it too (its audit record says so). Cancelling an unknown
id is a no-op. Raw HTTP, both eras, both runtimes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from harness.http_raw import HANDSHAKE, MODERN, call_tool, request, rpc_body, rpc_headers, split
from harness.ledger import assert_verifies, ledger_lines


def payload_of(reply) -> dict:
    doc = json.loads(reply.rpc_response()["result"]["content"][0]["text"])
    return doc.get("result", doc) if "_meter" in doc else doc


def start_run(base: str, version: str) -> str:
    run = call_tool(base, "bernstein_run", {"goal": "a run nobody works on"}, version=version)
    assert run.status == 200, run.body[:300]
    return payload_of(run)["run_id"]


def in_background(fn):
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("reply", fn()), daemon=True)
    t.start()
    return t, out


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
def test_a_cancelled_long_poll_answers_its_partial_handle(http_server, version):
    srv = http_server("cancel-poll", record=False)
    run_id = start_run(srv.direct_base, version)
    started = time.monotonic()
    t, out = in_background(lambda: call_tool(
        srv.direct_base, "bernstein_run_status", {"run_id": run_id, "wait_ms": 60000},
        version=version, id_="poll-1"))
    time.sleep(0.5)
    assert t.is_alive(), "the long poll answered before it was cancelled"
    # An unknown id is a no-op; the poll keeps waiting.
    assert notify_cancelled(srv.direct_base, "nobody", version).status == 202
    time.sleep(0.3)
    assert t.is_alive()
    assert notify_cancelled(srv.direct_base, "poll-1", version).status == 202
    t.join(10)
    assert not t.is_alive(), "the cancelled poll did not answer"
    assert time.monotonic() - started < 30
    reply = out["reply"]
    result = reply.rpc_response()["result"]
    assert result["cancelled"] is True
    assert "isError" not in result, result
    assert "structuredContent" not in result
    [handle] = result["partial"]
    assert handle["runId"] == run_id and handle["status"] == "working"
    text = payload_of(reply)
    assert text["cancelled"] is True and text["partial"] == result["partial"]
    # The cancelled call is audited as such.
    audits = [json.loads(l.raw) for l in ledger_lines(srv_sdd(srv))]
    cancelled = [a for a in audits if a.get("kind") == "mcp.stateless_call"
                 and a["body"].get("error") == "cancelled"]
    assert len(cancelled) == 1, cancelled
    assert_verifies(srv_sdd(srv))


def test_a_long_poll_answers_when_its_run_moves_and_settles_at_its_deadline(http_server):
    srv = http_server("poll-moves", record=False)
    run_id = start_run(srv.direct_base, HANDSHAKE)
    first = payload_of(call_tool(srv.direct_base, "bernstein_run_status", {"run_id": run_id}))
    t, out = in_background(lambda: call_tool(
        srv.direct_base, "bernstein_run_status",
        {"run_id": run_id, "wait_ms": 60000, "since": first["journalHead"]}, id_=2))
    time.sleep(0.5)
    assert t.is_alive()
    call_tool(srv.direct_base, "bernstein_run", {"goal": "a subtask", "parent_task_id": run_id}, id_=3)
    t.join(10)
    assert not t.is_alive(), "the poll did not notice the run moved"
    moved = payload_of(out["reply"])
    assert moved["journalHead"] != first["journalHead"]
    assert "cancelled" not in out["reply"].rpc_response()["result"]
    # Nothing moves: the poll answers the handle as it stands once wait_ms has passed.
    started = time.monotonic()
    settled = call_tool(srv.direct_base, "bernstein_run_status",
                        {"run_id": run_id, "wait_ms": 700, "since": moved["journalHead"]}, id_=4)
    assert time.monotonic() - started >= 0.6
    assert payload_of(settled)["journalHead"] == moved["journalHead"]
    assert settled.rpc_response()["result"]["isError"] is False


def test_closing_the_connection_cancels_a_waiting_request(http_server):
    srv = http_server("cancel-close", record=False)
    run_id = start_run(srv.direct_base, MODERN)
    msg = rpc_body("tools/call", {"name": "bernstein_run_status",
                                  "arguments": {"run_id": run_id, "wait_ms": 60000}},
                   id_=11, version=MODERN)
    body = json.dumps(msg).encode()
    headers = rpc_headers(msg, version=MODERN)
    host, port = split(srv.direct_base)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    raw = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n{head}Content-Length: {len(body)}\r\n\r\n"
           ).encode() + body
    with socket.create_connection((host, port)) as s:
        s.sendall(raw)
        time.sleep(0.5)
    # The server notices within its polling interval and records the call as cancelled.
    sdd = srv_sdd(srv)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        audits = [json.loads(l.raw) for l in ledger_lines(sdd)]
        if any(a.get("kind") == "mcp.stateless_call" and a["body"].get("error") == "cancelled"
               for a in audits):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("closing the connection did not cancel the waiting request")
    # And the server goes on serving.
    assert call_tool(srv.direct_base, "bernstein_status", {}, id_=12).status == 200


def notify_cancelled(base: str, request_id, version: str):
    note = rpc_body("notifications/cancelled", {"requestId": request_id, "reason": "host gave up"},
                    version=version)
    note.pop("id")
    return request(base, "POST", "/mcp", json.dumps(note).encode(), rpc_headers(note, version=version))


def srv_sdd(srv) -> Path:
    return Path(srv.argv[srv.argv.index("--workdir") + 1]) / ".sdd"
