"""The TypeScript SDK 1.x as a handshake-era host over streamable HTTP, against the conformance
fixture server on each runtime: `initialize` is answered with a sealed `Mcp-Session-Id`, the SDK
sends it back on every request, and a call on another connection than `initialize` is asked
what `initialize` declared (elicitation, sampling) and hears the level `logging/setLevel` set.

Cases: the SDK's own pooled fetch; a new TCP connection for every request (so `initialize`,
`logging/setLevel`, each call and each answer arrive on different connections for certain);
and the same without the session id, where the calls declared nothing (-32021) and hear no
log message, which is what the session id fixes.
"""

from __future__ import annotations

import pytest

from harness import fixture_server


@pytest.fixture
def fixture_url(tmp_path, runtime):
    with fixture_server.running(tmp_path, ["--runtime", runtime]) as url:
        yield url


def host(node_clients, url: str, connections: str) -> dict:
    report = node_clients.report("ts1_session.mjs", {"URL": url, "CONNECTIONS": connections})
    assert "fatal" not in report, report["fatal"]
    return report


def text(call: dict) -> str:
    assert "error" not in call, call
    assert call["isError"] is False, call
    return call["content"][0]["text"]


LOGS = ["Tool execution started", "Tool processing data", "Tool execution completed"]


@pytest.mark.parametrize("connections", ["pooled", "fresh"])
def test_calls_are_asked_and_logged_across_connections(node_clients, fixture_url, connections):
    rep = host(node_clients, fixture_url, connections)
    session = rep["sessionId"]
    assert session and len(session) < 200 and all(0x21 <= ord(c) <= 0x7E for c in session), session
    # Every request after initialize carried it.
    assert rep["withSession"] == rep["requests"] - 1, rep
    assert text(rep["calls"]["test_elicitation"]) == (
        '"User response: action=accept, content={\\"email\\":\\"ada@example.org\\",\\"username\\":\\"ada\\"}"'
    )
    assert text(rep["calls"]["test_sampling"]) == '"LLM response: Paris"'
    assert rep["asked"] == {"elicitation": 1, "sampling": 1}
    assert text(rep["calls"]["test_tool_with_logging"]) == '"Logging test completed: 3 messages logged."'
    assert rep["logs"] == LOGS


def test_without_the_session_id_a_call_on_another_connection_declared_nothing(node_clients, fixture_url):
    rep = host(node_clients, fixture_url, "fresh-no-session")
    assert rep["withSession"] == 0
    for name in ("test_elicitation", "test_sampling"):
        assert rep["calls"][name]["error"]["code"] == -32021, rep["calls"][name]
    assert rep["asked"] == {"elicitation": 0, "sampling": 0}
    text(rep["calls"]["test_tool_with_logging"])
    assert rep["logs"] == []
