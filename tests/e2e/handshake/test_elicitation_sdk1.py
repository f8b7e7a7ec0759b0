"""The Python SDK 1.x (`mcp<2`) as a handshake-era host the server asks mid-call: over the legacy
SSE transport (whose stream keeps what `initialize` declared, as stdio does) against the
conformance fixture server (harness/fixture_server.py: the same engine as `bernstein mcp`, with
the suite's tools that ask). The engine sends `elicitation/create` and `sampling/createMessage`
as JSON-RPC requests on the call's stream, parks the call and resumes it when the SDK's
callback answers (its response is POSTed like any message).

Cases: a person who accepts, one who declines, one who answers only after the expiry (the call
has ended with an error, the late answer is ignored and the ledger is unchanged), a model's
reply, and a host that declared no elicitation (never asked: -32021).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.shared.exceptions import McpError

from harness import fixture_server

EXPIRY_SECS = 2


@pytest.fixture
def fixture(tmp_path):
    with fixture_server.running(tmp_path, ["--input-expiry-secs", str(EXPIRY_SECS)]) as url:
        yield url.removesuffix("/mcp") + "/sse", tmp_path / "fixture-work"


def ledger_lines(workdir: Path) -> int:
    path = workdir / ".sdd" / "ledger" / "ledger.jsonl"
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def run(url: str, calls: list[tuple[str, dict]], **callbacks):
    async def go():
        async with sse_client(url) as (read, write):
            async with ClientSession(read, write, **callbacks) as session:
                await session.initialize()
                results = []
                for name, args in calls:
                    try:
                        results.append(await session.call_tool(name, args))
                    except McpError as e:
                        results.append(e.error)
                return results

    return anyio.run(go)


def text(result) -> str:
    assert isinstance(result, types.CallToolResult), result
    assert result.isError is False, result
    return json.loads(result.content[0].text)


def elicit(action: str, asked: list[str]):
    async def callback(_ctx, params: types.ElicitRequestParams):
        asked.append(params.message)
        if action == "accept":
            return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.org"})
        return types.ElicitResult(action=action)

    return callback


ASK = ("test_elicitation", {"message": "Who are you?"})


def test_a_person_who_accepts_is_heard_and_the_call_recorded(fixture):
    url, workdir = fixture
    asked: list[str] = []
    before = ledger_lines(workdir)
    [result] = run(url, [ASK], elicitation_callback=elicit("accept", asked))
    assert text(result) == 'User response: action=accept, content={"email":"ada@example.org","username":"ada"}'
    assert asked == ["Who are you?"]
    assert ledger_lines(workdir) > before, "the answered call is audited"


def test_a_person_who_declines_is_heard(fixture):
    url, _ = fixture
    asked: list[str] = []
    [result] = run(url, [ASK], elicitation_callback=elicit("decline", asked))
    assert text(result) == "User response: action=decline, content={}"


def test_a_question_not_answered_in_time_expires_and_records_nothing(fixture):
    url, workdir = fixture
    before = ledger_lines(workdir)

    async def too_late(_ctx, _params):
        # The person answers only after the server's expiry (the SDK serves the question
        # inline, so an answer that never comes would also stall the client's own loop).
        await anyio.sleep(EXPIRY_SECS + 1)
        return types.ElicitResult(action="accept", content={"username": "late", "email": "l@example.org"})

    [refused] = run(url, [ASK], elicitation_callback=too_late)
    assert isinstance(refused, types.ErrorData), refused
    assert refused.code == -32000
    assert refused.data == {"reason": "input_expired"}
    assert ledger_lines(workdir) == before


def test_a_model_is_asked_through_sampling(fixture):
    url, _ = fixture

    async def sample(_ctx, params: types.CreateMessageRequestParams):
        assert params.messages[0].content.text == "Capital of France?"
        return types.CreateMessageResult(role="assistant", model="e2e",
                                         content=types.TextContent(type="text", text="Paris"))

    [result] = run(url, [("test_sampling", {"prompt": "Capital of France?"})], sampling_callback=sample)
    assert text(result) == "LLM response: Paris"


def test_a_host_without_elicitation_is_never_asked(fixture):
    url, _ = fixture
    [refused] = run(url, [ASK])
    assert isinstance(refused, types.ErrorData), refused
    assert refused.code == -32021
    assert refused.data == {"requiredCapabilities": {"elicitation": {}}}
