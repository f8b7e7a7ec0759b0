"""The TypeScript SDK 2.x as a host that answers the server's questions (2026-07-28 multi
round-trip requests): against the conformance fixture server (`bernstein-conformance-fixture`:
the same engine, transport and ledger as `bernstein mcp`, with the suite's tools that ask for
input), the SDK's own loop answers each `InputRequiredResult` through its elicitation and
sampling handlers and retries with `inputResponses` and the `requestState`.

Cases: a person who accepts (one round, several rounds with state carried by the server's
`requestState`), one who declines, and a host that declared no elicitation (never asked: the
server refuses with -32021 where a tool cannot do without, and asks only for what was declared
where it can).
"""

from __future__ import annotations

import json

import pytest

from harness import fixture_server


@pytest.fixture
def fixture_url(tmp_path):
    with fixture_server.running(tmp_path) as url:
        yield url


def host(node_clients, url: str, caps: dict, tools: list[str], answer: dict | None = None) -> dict:
    report = node_clients.report("ts2_input.mjs", {
        "URL": url, "CAPS": json.dumps(caps), "TOOLS": json.dumps(tools),
        "ANSWER": json.dumps(answer or {"action": "cancel"}),
    })
    assert "fatal" not in report, report["fatal"]
    assert report["protocolVersion"] == "2026-07-28", report
    return report


def text(call: dict) -> str:
    assert "error" not in call, call
    assert call["isError"] is False, call
    return json.loads(call["content"][0]["text"])


ELICIT = "test_input_required_result_elicitation"
ROUNDS = "test_input_required_result_multi_round"
STATE = "test_input_required_result_request_state"


def test_a_host_that_accepts_answers_every_round(node_clients, fixture_url):
    answer = {"action": "accept", "content": {"name": "Ada", "color": "blue", "ok": True}}
    rep = host(node_clients, fixture_url, {"elicitation": {}}, [ELICIT, ROUNDS, STATE], answer)
    assert text(rep["calls"][ELICIT]) == "Hello, Ada!"
    # Two rounds: the name asked first travels in the server's requestState to the second.
    assert text(rep["calls"][ROUNDS]) == "Ada's favourite colour is blue"
    assert text(rep["calls"][STATE]) == "state-ok: confirmed ok=true"
    assert rep["asked"]["elicitation"] == 4


def test_a_host_that_declines_is_heard(node_clients, fixture_url):
    rep = host(node_clients, fixture_url, {"elicitation": {}}, [ELICIT], {"action": "decline"})
    assert text(rep["calls"][ELICIT]) == "Hello, !"
    assert rep["asked"]["elicitation"] == 1


def test_a_host_without_elicitation_is_never_asked(node_clients, fixture_url):
    tools = [ELICIT, "test_input_required_result_capabilities"]
    rep = host(node_clients, fixture_url, {"sampling": {}}, tools)
    # The tool cannot do without a form: the server refuses, naming the capability.
    err = rep["calls"][ELICIT]["error"]
    assert err["code"] == -32021, err
    # A tool that can do without asks only for what was declared: the model, once.
    assert text(rep["calls"]["test_input_required_result_capabilities"]) == {"answered": ["greeting"]}
    assert rep["asked"] == {"elicitation": 0, "sampling": 1}
