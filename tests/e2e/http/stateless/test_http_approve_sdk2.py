"""Bernstein's approvals asked of the person through the host, with the official SDK `mcp>=2`
(2026-07-28) over streamable HTTP on both runtimes: `bernstein_approve` without a decision ends
with an `InputRequiredResult` (the approval form, the plan's rendering hash in its message) and
the SDK's own loop answers it through its elicitation callback and retries with
`inputResponses` and the `requestState`.

Cases: a person who approves a plan (with an access token from a real local IdP: the decision
is recorded with the principal), one who rejects it, one who answers only after the expiry
(the retry is refused, the ledger is byte-identical), a host without elicitation (a plan keeps
today's refusal, finished work is approved as before), and finished work decided on the form.
"""

from __future__ import annotations

import anyio
import pytest
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from harness import approvals
from harness.idp import Idp
from harness.payloads import ok_payload, outcome

pytestmark = pytest.mark.anyio

AUDIENCE = "urn:bernstein:e2e"
EXPIRY_SECS = 2


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


def person(content: dict | None, asked: list[str], delay: float = 0):
    """An elicitation callback: the person reads the form and answers `content` (None: declines)."""

    async def elicit(_ctx, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if delay:
            await anyio.sleep(delay)
        if content is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    return elicit


def client(srv, elicit=None, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(srv.mcp_url, http_client=http), mode="2026-07-28", cache=None,
                  elicitation_callback=elicit)


async def make_plan(c: Client) -> tuple[list[str], str]:
    """A plan of a root and one subtask; its ids and its hash as the last answer gave it."""
    root = ok_payload(await c.call_tool("bernstein_run", {"goal": "Ship the migration", "plan": True}))
    sub = ok_payload(await c.call_tool("bernstein_run", {"goal": "Write the rollback",
                                                         "parent_task_id": root["task_id"], "role": "qa"}))
    assert sub["plan_id"] == root["task_id"] and sub["plan_hash"] != root["plan_hash"]
    return [root["task_id"], sub["task_id"]], sub["plan_hash"]


async def test_a_person_approves_a_plan_recorded_with_the_principal(http_server, idp, workdir):
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer, "BERNSTEIN_MCP_OAUTH_AUDIENCE": AUDIENCE}
    srv = http_server("approve-oauth", env=env)
    token = idp.token(claims={"aud": AUDIENCE, "sub": "the-person", "scope": "bernstein.write"})
    asked: list[str] = []
    async with client(srv, person(approvals.APPROVE, asked), token) as c:
        ids, plan_hash = await make_plan(c)
        decided = ok_payload(await c.call_tool("bernstein_approve", {"task_id": ids[1]}))
    assert decided["decision"] == "approve" and decided["plan_hash"] == plan_hash, decided
    [message] = asked
    assert plan_hash in message and all(i in message for i in ids), message
    assert "[qa, planned] Write the rollback" in message, message
    call = approvals.the_decision(workdir, ids[0], "plan approve", plan_hash)
    assert call["principal"] == {"iss": idp.issuer, "sub": "the-person"}, call
    assert any("ok  by" in line and "the-person" in line
               for line in approvals.approve_calls(approvals.verify_verbose(workdir)))
    approvals.assert_approved(workdir, ids)


async def test_a_person_rejects_a_plan(http_server, workdir):
    srv = http_server("approve-reject")
    async with client(srv, person(approvals.REJECT, [])) as c:
        ids, plan_hash = await make_plan(c)
        decided = ok_payload(await c.call_tool("bernstein_approve", {"task_id": ids[0]}))
    assert decided["decision"] == "reject", decided
    approvals.the_decision(workdir, ids[0], "plan reject", plan_hash)
    approvals.assert_rejected(workdir, ids)


async def test_a_person_who_answers_too_late_decides_nothing(http_server, workdir):
    srv = http_server("approve-late", env={"BERNSTEIN_MCP_INPUT_EXPIRY_SECS": str(EXPIRY_SECS)})
    async with client(srv, person(approvals.APPROVE, [], delay=EXPIRY_SECS + 1)) as c:
        ids, _ = await make_plan(c)
        before = approvals.ledger_bytes(workdir)
        with pytest.raises(MCPError) as refused:
            await c.call_tool("bernstein_approve", {"task_id": ids[0]})
    assert refused.value.error.code == -32602, refused.value.error
    assert refused.value.error.data["reason"] == "request_state_expired", refused.value.error
    assert approvals.ledger_bytes(workdir) == before
    assert approvals.statuses(workdir)[ids[0]] == "planned"


async def test_a_host_without_elicitation_keeps_todays_flow(http_server, workdir):
    srv = http_server("approve-no-elicitation")
    async with client(srv) as c:
        ids, _ = await make_plan(c)
        plan = outcome(await c.call_tool("bernstein_approve", {"task_id": ids[0]}))
        # The model cannot decide its own plan either.
        own = outcome(await c.call_tool("bernstein_approve", {"task_id": ids[0], "decision": "approve"}))
        work = ok_payload(await c.call_tool("bernstein_run", {"goal": "Reviewed work", "requires_approval": True}))
        ok_payload(await c.call_tool("bernstein_complete", {"task_id": work["task_id"], "result_summary": "done it"}))
        approved = ok_payload(await c.call_tool("bernstein_approve", {"task_id": work["task_id"]}))
    assert plan.is_error and plan.payload["error"] == "task_not_awaiting_approval", plan.payload
    assert "host that can elicit" in plan.payload["hint"], plan.payload
    assert own.is_error and own.payload["error"] == "plan_decided_by_person", own.payload
    assert approved["status"] == "done" and approved["decision"] == "approve", approved
    assert approvals.decisions(workdir) == []
    assert approvals.statuses(workdir)[ids[0]] == "planned"


@pytest.mark.parametrize("answer", ["approve", "reject", "decline"])
async def test_finished_work_is_decided_on_the_form(http_server, workdir, answer):
    srv = http_server("approve-work")
    content = None if answer == "decline" else {"decision": answer, "note": "checked"}
    asked: list[str] = []
    async with client(srv, person(content, asked)) as c:
        work = ok_payload(await c.call_tool("bernstein_run", {"goal": "Reviewed work", "requires_approval": True}))
        task = work["task_id"]
        ok_payload(await c.call_tool("bernstein_complete", {"task_id": task, "result_summary": "wrote the notes"}))
        decided = outcome(await c.call_tool("bernstein_approve", {"task_id": task}))
    [message] = asked
    assert task in message and "wrote the notes" in message, message
    now = approvals.statuses(workdir)[task]
    if answer == "decline":
        assert decided.is_error and decided.payload["error"] == "approval_declined", decided.payload
        assert now == "pending_approval"
    else:
        assert not decided.is_error and decided.payload["decision"] == answer, decided.payload
        assert now == {"approve": "done", "reject": "open"}[answer]
