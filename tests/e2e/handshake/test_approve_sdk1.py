"""Bernstein's approvals asked of the person through the host, with the official SDK `mcp<2`
(handshake era) over stdio and over the legacy SSE transport, on both runtimes: the SDK declares
elicitation when it is given a callback; `bernstein_approve` without a decision sends
`elicitation/create` on the call's stream, the call parks, and the callback's answer decides.

Cases: a person who approves a plan, one who rejects it, one who answers only after the expiry
(the call ends with `input_expired`, the ledger is byte-identical), a host without elicitation
(a plan keeps today's refusal, finished work is approved as before), and finished work decided
on the form.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from harness import approvals
from harness.payloads import ok_payload, outcome

pytestmark = pytest.mark.anyio

EXPIRY_SECS = 2


@pytest.fixture(params=["stdio", "sse"])
def transport(request):
    return request.param


@asynccontextmanager
async def host(transport, launcher, http_server, elicit=None, env=None):
    """A connected SDK 1.x session that answers forms with `elicit` (None: declares none)."""
    if transport == "stdio":
        params = launcher.stdio_params("approve-sdk1", env=env)
        with launcher.sdk_errlog("approve-sdk1") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicit) as s:
                    await s.initialize()
                    yield s
    else:
        srv = http_server("approve-sdk1-sse", env=env)
        async with sse_client(srv.sse_url) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as s:
                await s.initialize()
                yield s


def person(content: dict | None, asked: list[str], delay: float = 0):
    async def elicit(_ctx, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if delay:
            await anyio.sleep(delay)
        if content is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    return elicit


async def make_plan(s: ClientSession) -> tuple[list[str], str]:
    root = ok_payload(await s.call_tool("bernstein_run", {"goal": "Ship the migration", "plan": True}))
    sub = ok_payload(await s.call_tool("bernstein_run", {"goal": "Write the rollback",
                                                         "parent_task_id": root["task_id"], "role": "qa"}))
    return [root["task_id"], sub["task_id"]], sub["plan_hash"]


async def test_a_person_approves_a_plan(transport, launcher, http_server, workdir):
    asked: list[str] = []
    async with host(transport, launcher, http_server, person(approvals.APPROVE, asked)) as s:
        ids, plan_hash = await make_plan(s)
        decided = ok_payload(await s.call_tool("bernstein_approve", {"task_id": ids[0]}))
    assert decided["decision"] == "approve" and decided["plan_hash"] == plan_hash, decided
    [message] = asked
    assert plan_hash in message and all(i in message for i in ids), message
    call = approvals.the_decision(workdir, ids[0], "plan approve", plan_hash)
    # No access token on stdio or anonymous loopback: no principal, as for any such call.
    assert "principal" not in call, call
    assert any(" ok" in line for line in approvals.approve_calls(approvals.verify_verbose(workdir)))
    approvals.assert_approved(workdir, ids)


async def test_a_person_rejects_a_plan(transport, launcher, http_server, workdir):
    async with host(transport, launcher, http_server, person(approvals.REJECT, [])) as s:
        ids, plan_hash = await make_plan(s)
        decided = ok_payload(await s.call_tool("bernstein_approve", {"task_id": ids[1]}))
    assert decided["decision"] == "reject", decided
    approvals.the_decision(workdir, ids[0], "plan reject", plan_hash)
    approvals.assert_rejected(workdir, ids)


async def test_a_person_who_never_answers_in_time_decides_nothing(transport, launcher, http_server, workdir):
    env = {"BERNSTEIN_MCP_INPUT_EXPIRY_SECS": str(EXPIRY_SECS)}
    answered = anyio.Event()
    slow = person(approvals.APPROVE, [], delay=EXPIRY_SECS + 1)

    async def late(ctx, params):
        try:
            return await slow(ctx, params)
        finally:
            answered.set()

    async with host(transport, launcher, http_server, late, env=env) as s:
        ids, _ = await make_plan(s)
        before = approvals.ledger_bytes(workdir)
        with pytest.raises(McpError) as refused:
            await s.call_tool("bernstein_approve", {"task_id": ids[0]})
        assert approvals.ledger_bytes(workdir) == before
        # The late answer is ignored: nothing is decided, and the session goes on.
        await answered.wait()
        ok_payload(await s.call_tool("bernstein_status", {}))
    assert refused.value.error.code == -32000, refused.value.error
    assert refused.value.error.data == {"reason": "input_expired"}, refused.value.error
    assert approvals.decisions(workdir) == []
    assert approvals.statuses(workdir)[ids[0]] == "planned"
    # Only the status call's audit record followed.
    after = approvals.ledger_bytes(workdir)
    assert after.startswith(before)
    assert [r["kind"] for r in approvals.records(workdir)[before.count(b"\n"):]] == ["mcp.stateless_call"]


async def test_a_host_without_elicitation_keeps_todays_flow(transport, launcher, http_server, workdir):
    async with host(transport, launcher, http_server) as s:
        ids, _ = await make_plan(s)
        plan = outcome(await s.call_tool("bernstein_approve", {"task_id": ids[0]}))
        own = outcome(await s.call_tool("bernstein_approve", {"task_id": ids[1], "decision": "approve"}))
        work = ok_payload(await s.call_tool("bernstein_run", {"goal": "Reviewed work", "requires_approval": True}))
        ok_payload(await s.call_tool("bernstein_complete", {"task_id": work["task_id"], "result_summary": "done"}))
        approved = ok_payload(await s.call_tool("bernstein_approve", {"task_id": work["task_id"]}))
    assert plan.is_error and plan.payload["error"] == "task_not_awaiting_approval", plan.payload
    assert "host that can elicit" in plan.payload["hint"], plan.payload
    assert own.is_error and own.payload["error"] == "plan_decided_by_person", own.payload
    assert approved["status"] == "done", approved
    assert approvals.decisions(workdir) == []


@pytest.mark.parametrize("answer", ["approve", "reject"])
async def test_finished_work_is_decided_on_the_form(transport, launcher, http_server, workdir, answer):
    asked: list[str] = []
    form = {"decision": answer, "note": "checked"}
    async with host(transport, launcher, http_server, person(form, asked)) as s:
        work = ok_payload(await s.call_tool("bernstein_run", {"goal": "Reviewed work", "requires_approval": True}))
        task = work["task_id"]
        ok_payload(await s.call_tool("bernstein_complete", {"task_id": task, "result_summary": "wrote the notes"}))
        decided = ok_payload(await s.call_tool("bernstein_approve", {"task_id": task}))
    [message] = asked
    assert task in message and "wrote the notes" in message, message
    assert decided["decision"] == answer, decided
    assert approvals.statuses(workdir)[task] == {"approve": "done", "reject": "open"}[answer]
