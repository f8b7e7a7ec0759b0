"""The JSON-RPC codec and the handshake era over raw stdio pipes.

What an SDK will not send: every handshake protocol version (including 2024-11-05), an
unsupported version, malformed JSON, invalid envelopes, unknown methods, notifications, ids
of every legal type, oversize and over-deep messages. After each abuse the same process must
still answer, and every line it wrote is schema-checked at teardown.
"""

from __future__ import annotations

import json

import pytest

from harness.payloads import outcome
from harness.raw import RawServer

HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def error_code(resp: dict) -> int:
    assert "error" in resp and "result" not in resp, f"expected a JSON-RPC error, got {resp}"
    err = resp["error"]
    assert isinstance(err.get("message"), str) and err["message"], f"error without a message: {resp}"
    return err["code"]


def unaddressed(resp: dict) -> bool:
    return resp.get("id", None) is None


def assert_alive(srv: RawServer) -> None:
    resp = srv.request("ping")
    assert resp.get("result") == {}, f"server stopped answering ping: {resp}"


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_initialize_negotiates_every_handshake_version(launcher, version):
    with RawServer.start(launcher, f"init-{version}") as srv:
        result = srv.initialize(version)
        assert result["protocolVersion"] == version
        assert result["serverInfo"]["name"]
        caps = result["capabilities"]
        for cap in ("tools", "prompts", "resources"):
            assert cap in caps, f"capability {cap} missing: {caps}"
        assert isinstance(result.get("instructions"), str) and result["instructions"]
        assert len(result["instructions"]) <= 900
        assert "capabilityCard" in json.dumps(result), "initialize must carry the capability card"
        assert_alive(srv)
        tools = srv.request("tools/list")["result"]["tools"]
        assert {"bernstein_run", "bernstein_status", "bernstein_run_status"} <= {t["name"] for t in tools}
        code, leftovers = srv.close()
    assert code == 0, f"server exit code at EOF: {code}"
    assert leftovers == [], f"unexpected messages: {leftovers}"


def test_unsupported_version_gets_newest_supported(launcher):
    with RawServer.start(launcher, "init-unsupported") as srv:
        result = srv.initialize("1999-01-01")
        assert result["protocolVersion"] == "2025-11-25"
        assert_alive(srv)


def test_malformed_json_is_a_parse_error_and_survivable(launcher):
    with RawServer.start(launcher, "parse-error") as srv:
        srv.initialize()
        for junk in (b'{"jsonrpc":"2.0","id":1,"method":"ping"\n', b"not json at all\n", b"\x80\xfe\xff\n"):
            srv.send_bytes(junk)
            resp = srv.recv()
            assert error_code(resp) == -32700, f"{junk!r} -> {resp}"
            assert unaddressed(resp), f"a parse error cannot name an id: {resp}"
        assert_alive(srv)


@pytest.mark.parametrize(
    "message, expected",
    [
        ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, (-32600,)),
        ({"id": 8, "method": "ping"}, (-32600,)),
        ({"jsonrpc": "2.0", "id": 9, "method": 42}, (-32600,)),
        ({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": [1, 2]}, (-32600, -32602)),
        ({"jsonrpc": "2.0", "id": 11}, (-32600,)),
    ],
    ids=["wrong-version", "no-jsonrpc", "method-not-string", "positional-params", "no-method"],
)
def test_invalid_request_is_refused_with_its_id(launcher, message, expected):
    with RawServer.start(launcher, "invalid-request") as srv:
        srv.initialize()
        srv.send(message)
        resp = srv.recv()
        assert error_code(resp) in expected, resp
        assert resp.get("id") in (message["id"], None), f"id must be echoed (or null): {resp}"
        assert_alive(srv)


def test_non_object_messages_are_invalid_requests(launcher):
    with RawServer.start(launcher, "non-object") as srv:
        srv.initialize()
        for value in (b"42\n", b'"ping"\n', b"null\n"):
            srv.send_bytes(value)
            resp = srv.recv()
            assert error_code(resp) == -32600, f"{value!r} -> {resp}"
        assert_alive(srv)


def test_unknown_method_is_method_not_found(launcher):
    with RawServer.start(launcher, "unknown-method") as srv:
        srv.initialize()
        resp = srv.request("bernstein/no_such_method", {})
        assert error_code(resp) == -32601, resp
        assert_alive(srv)


def test_notifications_get_no_reply(launcher):
    with RawServer.start(launcher, "notifications") as srv:
        srv.initialize()
        srv.notify("notifications/initialized")
        srv.notify("notifications/no_such_notification", {"x": 1})
        srv.notify("ping")  # a request method sent as a notification: still no reply
        srv.notify("tools/list", {})
        probe = srv.send_request("ping")
        before = []
        while True:
            msg = srv.recv()
            if msg.get("id") == probe and "method" not in msg:
                break
            before.append(msg)
        answers = [m for m in before if "result" in m or "error" in m]
        assert answers == [], f"notifications were answered: {answers}"
        code, leftovers = srv.close()
    assert code == 0
    assert [m for m in leftovers if "result" in m or "error" in m] == [], leftovers


@pytest.mark.parametrize(
    "rid",
    [0, 1, -1, 2**53, -(2**53), "", "0", "abc", "id with spaces", "\u00e9\u6f22\U0001f4a1", "1" * 200],
    ids=lambda v: repr(v)[:20],
)
def test_ids_are_echoed_exactly(launcher, rid):
    with RawServer.start(launcher, "ids") as srv:
        srv.initialize()
        srv.send_request("ping", id=rid)
        resp = srv.recv()
        assert "id" in resp and type(resp["id"]) is type(rid) and resp["id"] == rid, f"sent {rid!r}, got {resp}"
        assert resp.get("result") == {}
        # an id of the same type for an error answer (ids are never reused within a session)
        other = rid ^ 1 if isinstance(rid, int) else rid + "-2"
        srv.send_request("no/such/method", id=other)
        resp = srv.recv()
        assert type(resp.get("id")) is type(other) and resp["id"] == other, f"sent {other!r}, got {resp}"


def test_oversize_message_is_refused_and_survivable(launcher):
    with RawServer.start(launcher, "oversize") as srv:
        srv.initialize()
        huge_goal = "x" * (4 << 20)  # well past any sane message limit
        srv.send_request("tools/call", {"name": "bernstein_run", "arguments": {"goal": huge_goal}}, id="big")
        resp = srv.recv()
        assert "error" in resp, f"an oversize message must be refused: {str(resp)[:300]}"
        assert resp.get("id") in ("big", None), resp
        assert_alive(srv)
        status = outcome(srv.call_tool("bernstein_status")["result"]).payload
        assert status["counts"]["total"] == 0, "a refused message must not create a task"


def test_deeply_nested_json_is_refused_and_survivable(launcher):
    with RawServer.start(launcher, "deep") as srv:
        srv.initialize()
        depth = 100_000
        scope = "[" * depth + "]" * depth
        line = (
            '{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":'
            '{"name":"bernstein_run","arguments":{"goal":"g","scope":' + scope + "}}}\n"
        )
        srv.send_bytes(line.encode())
        resp = srv.recv()
        refused = "error" in resp or resp.get("result", {}).get("isError") is True
        assert refused, f"an over-deep message must be refused: {str(resp)[:300]}"
        assert resp.get("id") in ("deep", None), resp
        # moderately deep arguments (past the depth limit, small in bytes)
        nested: object = "leaf"
        for _ in range(64):
            nested = {"n": nested}
        resp = srv.call_tool("bernstein_run", {"goal": "g", "scope": nested})
        refused = "error" in resp or resp["result"].get("isError") is True
        assert refused, f"arguments nested 64 deep must be refused: {str(resp)[:300]}"
        assert_alive(srv)
        status = outcome(srv.call_tool("bernstein_status")["result"]).payload
        assert status["counts"]["total"] == 0


def test_control_characters_in_arguments_are_refused(launcher):
    with RawServer.start(launcher, "control-chars") as srv:
        srv.initialize()
        for goal in ("bad\u0000goal", "bell\u0007goal"):
            resp = srv.call_tool("bernstein_run", {"goal": goal})
            refused = "error" in resp or resp["result"].get("isError") is True
            assert refused, f"goal {goal!r} must be refused: {resp}"
        for run_id in ("../x", "a/../../etc/passwd", "x\u0000y", "/abs/path"):
            resp = srv.call_tool("bernstein_run_status", {"run_id": run_id})
            refused = "error" in resp or resp["result"].get("isError") is True
            assert refused, f"run id {run_id!r} must be refused: {resp}"
        assert_alive(srv)
        status = outcome(srv.call_tool("bernstein_status")["result"]).payload
        assert status["counts"]["total"] == 0


def test_server_exits_cleanly_at_end_of_input(launcher):
    with RawServer.start(launcher, "eof") as srv:
        srv.initialize()
        srv.call_tool("bernstein_run", {"goal": "exit cleanly after this"})
        code, leftovers = srv.close()
    assert code == 0
    assert leftovers == []


def test_pipelined_requests_are_all_answered(launcher):
    with RawServer.start(launcher, "pipelined") as srv:
        srv.initialize()
        ids = [srv.send_request("ping") for _ in range(20)]
        ids += [srv.send_request("tools/list") for _ in range(5)]
        got = {json.dumps(srv.wait_for(i)["id"]) for i in ids}
        assert got == {json.dumps(i) for i in ids}
