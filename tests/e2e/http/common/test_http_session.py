"""Handshake-era session ids over streamable HTTP (raw HTTP, both runtimes; each request on a
fresh connection): `initialize` is answered with a sealed `Mcp-Session-Id` (visible ASCII,
short); a request carrying it is served on any connection, and a level `logging/setLevel` set
with it reaches that session's calls on other connections (and no one else's); a changed,
made-up or non-ASCII id is refused with a JSON-RPC error body (404, or 400 for bad bytes);
`DELETE` is 405 (nothing to end); 2026-07-28 requests get no session id and ignore one.
"""

from __future__ import annotations

import json

from harness.http_raw import MODERN, call_tool, request, rpc, rpc_body, rpc_headers


def initialize(base: str) -> str:
    r = rpc(base, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "raw", "version": "1"}})
    assert r.status == 200, r.body[:300]
    session = r.headers.get("mcp-session-id")
    assert session, r.headers
    assert len(session) < 200 and all(0x21 <= ord(c) <= 0x7E for c in session), session
    return session


def with_session(session: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session}


def run_id_of(reply) -> str:
    doc = json.loads(reply.rpc_response()["result"]["content"][0]["text"])
    return doc.get("result", doc)["run_id"]


def log_messages(reply) -> list[dict]:
    return [m for m in reply.messages() if m.get("method") == "notifications/message"]


def test_a_session_id_is_issued_and_carries_the_level_across_connections(http_server):
    srv = http_server("session")
    base = srv.direct_base
    session = initialize(base)
    other = initialize(base)
    assert other != session
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    r = request(base, "POST", "/mcp", json.dumps(note).encode(),
                rpc_headers(note, extra=with_session(session)))
    assert r.status == 202, r.body[:300]
    r = rpc(base, "logging/setLevel", {"level": "info"}, id_=2, extra=with_session(session))
    assert r.status == 200 and r.rpc_response()["result"] == {}, r.body[:300]
    run = call_tool(base, "bernstein_run", {"goal": "a session's run"}, id_=3, extra=with_session(session))
    run_id = run_id_of(run)
    status = {"run_id": run_id}
    heard = call_tool(base, "bernstein_run_status", status, id_=4, extra=with_session(session))
    assert heard.status == 200, heard.body[:300]
    messages = log_messages(heard)
    assert messages and all(m["params"]["level"] == "info" for m in messages), heard.body[:600]
    # Another session, and a request without one, asked for no level: no message.
    for extra in (with_session(other), {}):
        quiet = call_tool(base, "bernstein_run_status", status, id_=5, extra=extra)
        assert quiet.status == 200 and log_messages(quiet) == [], quiet.body[:600]


def test_a_session_id_this_server_did_not_issue_is_refused(http_server):
    srv = http_server("session-refused")
    base = srv.direct_base
    session = initialize(base)
    changed = ("B" if session[0] == "A" else "A") + session[1:]
    for bad, reason in [(changed, "session_forged"), ("s-1", "session_malformed"),
                        (session + "A" * 200, "session_malformed")]:
        r = rpc(base, "tools/list", id_=7, extra=with_session(bad))
        assert r.status == 404, (bad, r.status, r.body[:300])
        body = r.json()
        assert body["id"] == 7 and body["error"]["code"] == -32600, body
        assert body["error"]["data"]["reason"] == reason, body
    # Bytes outside visible ASCII: 400, structured.
    msg = rpc_body("tools/list", id_=8)
    headers = rpc_headers(msg)
    headers["Mcp-Session-Id"] = "caf\u00e9"
    r = request(base, "POST", "/mcp", json.dumps(msg).encode(),
                {k: v.encode("latin-1").decode("latin-1") for k, v in headers.items()})
    assert r.status == 400, r.body[:300]
    assert r.json()["error"]["data"]["reason"] == "session_id_invalid_characters"
    # The real one still works, and DELETE ends nothing.
    assert rpc(base, "tools/list", id_=9, extra=with_session(session)).status == 200
    r = request(base, "DELETE", "/mcp", None, with_session(session))
    assert r.status == 405 and r.headers.get("allow") == "POST", r
    assert "error" in r.json()
    assert rpc(base, "tools/list", id_=10, extra=with_session(session)).status == 200


def test_the_stateless_era_gets_no_session_id_and_ignores_one(http_server):
    srv = http_server("session-modern")
    base = srv.direct_base
    r = rpc(base, "server/discover", version=MODERN)
    assert r.status == 200 and "mcp-session-id" not in r.headers, r.headers
    r = rpc(base, "tools/list", version=MODERN, extra=with_session("not-a-session"))
    assert r.status == 200 and "result" in r.rpc_response(), r.body[:300]
    assert "mcp-session-id" not in r.headers
