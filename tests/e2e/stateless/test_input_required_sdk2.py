"""The Python SDK 2.x (`mcp>=2`) as a host that answers the server's questions (2026-07-28 multi
round-trip requests): `mcp.Client(url, mode="2026-07-28")` against the conformance fixture
server (harness/fixture_server.py: the same engine as `bernstein mcp`, with the suite's tools
and prompt that ask for input). The SDK's own loop answers each `InputRequiredResult` through
its callbacks and retries with `inputResponses` and the `requestState`.

Cases: a person who accepts (a tool, a tool of two rounds whose first answer travels in the
server's state, a prompt), one who declines, and a host that declared sampling but no
elicitation (never asked for a form: -32021 where the tool cannot do without, only the model
where it can).
"""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client, MCPError, types

from harness import fixture_server


@pytest.fixture
def fixture_url(tmp_path):
    with fixture_server.running(tmp_path) as url:
        yield url


def answering(action: str, asked: list[str]):
    async def elicit(_ctx, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if action != "accept":
            return types.ElicitResult(action=action)
        return types.ElicitResult(action="accept", content={"name": "Ada", "color": "blue", "context": "e2e"})

    return elicit


async def sample(_ctx, _params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Paris"),
                                     model="e2e-model")


def payload(result: types.CallToolResult):
    assert result.is_error is False, result
    return json.loads(result.content[0].text)


def test_a_host_that_accepts_answers_tools_and_prompts(fixture_url):
    asked: list[str] = []

    async def go():
        async with Client(fixture_url, mode="2026-07-28", cache=None,
                          elicitation_callback=answering("accept", asked)) as c:
            one = payload(await c.call_tool("test_input_required_result_elicitation", {}))
            two = payload(await c.call_tool("test_input_required_result_multi_round", {}))
            prompt = await c.get_prompt("test_input_required_result_prompt")
            return one, two, prompt.messages[0].content.text

    one, two, prompt = anyio.run(go)
    assert one == "Hello, Ada!"
    # The name answered in round one reached round two through the server's requestState.
    assert two == "Ada's favourite colour is blue"
    assert prompt == "Context: e2e"
    assert asked == ["What is your name?", "Step 1: What is your name?",
                     "Step 2: What is your favorite color?", "What context should the prompt use?"]


def test_a_host_that_declines_is_heard(fixture_url):
    asked: list[str] = []

    async def go():
        async with Client(fixture_url, mode="2026-07-28", cache=None,
                          elicitation_callback=answering("decline", asked)) as c:
            return payload(await c.call_tool("test_input_required_result_elicitation", {}))

    assert anyio.run(go) == "Hello, !"
    assert asked == ["What is your name?"]


def test_a_host_without_elicitation_is_never_asked_for_a_form(fixture_url):
    async def go():
        async with Client(fixture_url, mode="2026-07-28", cache=None, sampling_callback=sample) as c:
            with pytest.raises(MCPError) as refused:
                await c.call_tool("test_input_required_result_elicitation", {})
            partial = payload(await c.call_tool("test_input_required_result_capabilities", {}))
            return refused.value, partial

    refused, partial = anyio.run(go)
    assert refused.error.code == -32021, refused.error
    assert refused.error.data == {"requiredCapabilities": {"elicitation": {}}}
    assert partial == {"answered": ["greeting"]}
