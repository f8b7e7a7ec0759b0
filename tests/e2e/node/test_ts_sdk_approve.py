"""Bernstein's approvals asked of the person through the host, with the TypeScript SDKs: 1.x
(handshake era, over stdio and legacy SSE: `elicitation/create` on the call's stream) and 2.x
(2026-07-28 over streamable HTTP: the SDK's multi round-trip loop answers the
`InputRequiredResult`; and the handshake era over stdio), on both runtimes. The driver declares
elicitation when $ELICIT is set and answers every form with it (clients/scenarios.mjs).

The plan is made beforehand with `bernstein run --plan` on the same project, so the ledger can
be compared byte for byte around the call. Cases: a person who approves the plan (its task
opens; the decision is recorded as `bernstein plan approve` records it, by a
`bernstein_approve` call), one who rejects it (cancelled), one who answers only after the
expiry (an error, the ledger byte-identical), a host without elicitation (today's refusal for
the plan, finished work approved as before), and finished work decided on the form.
"""

from __future__ import annotations

import json

import pytest

from harness import approvals
from harness.launch import run_cli

EXPIRY_SECS = 2

CASES = [
    pytest.param("ts1.mjs", "stdio", "legacy", id="ts1-stdio"),
    pytest.param("ts1.mjs", "sse", "legacy", id="ts1-sse"),
    pytest.param("ts2.mjs", "http", "modern", id="ts2-http-2026"),
    pytest.param("ts2.mjs", "stdio", "legacy", id="ts2-stdio"),
]


@pytest.fixture
def serve(stdio_target, http_server):
    """A factory: `serve(transport, env)` -> a TARGET for the drivers, the server started with
    `env` on top of a clean environment."""

    def make(transport: str, env: dict[str, str] | None = None) -> dict:
        if transport == "stdio":
            target = stdio_target("approve")
            target["env"].update(env or {})
            return target
        srv = http_server("approve", env=env)
        return {"transport": transport, "url": srv.mcp_url if transport == "http" else srv.sse_url}

    return make


def make_plan(workdir) -> dict:
    """A one-task plan recorded by the CLI: `bernstein run --plan --json`."""
    assert run_cli(["init", str(workdir)]).returncode == 0
    proc = run_cli(["run", "--workdir", str(workdir), "--plan", "--json", "Ship the migration"])
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["status"] == "planned" and plan["plan_hash"].startswith("sha256:"), plan
    return plan


def drive(node_clients, target, script, era, scenario, answer=None, **env) -> dict:
    extra = {k.upper(): v for k, v in env.items()}
    if answer is not None:
        extra["ELICIT"] = json.dumps(answer)
    rep = node_clients.run(script, target, scenario, era, env=extra)
    assert rep["ok"], rep.get("error")
    return rep["result"]


def accept(content: dict) -> dict:
    return {"action": "accept", "content": content}


@pytest.mark.parametrize("script,transport,era", CASES)
def test_a_person_approves_a_plan(node_clients, serve, workdir, script, transport, era):
    plan = make_plan(workdir)
    target = serve(transport)
    res = drive(node_clients, target, script, era, "approve_task", accept(approvals.APPROVE), task_id=plan["task_id"])
    assert res["body"]["decision"] == "approve" and res["body"]["plan_hash"] == plan["plan_hash"], res
    [message] = res["asked"]
    assert plan["plan_hash"] in message and plan["task_id"] in message, message
    approvals.the_decision(workdir, plan["task_id"], "plan approve", plan["plan_hash"])
    assert approvals.statuses(workdir)[plan["task_id"]] == "open"
    assert any(" ok" in line for line in approvals.approve_calls(approvals.verify_verbose(workdir)))


@pytest.mark.parametrize("script,transport,era", CASES)
def test_a_person_rejects_a_plan(node_clients, serve, workdir, script, transport, era):
    plan = make_plan(workdir)
    res = drive(node_clients, serve(transport), script, era, "approve_task", accept(approvals.REJECT),
                task_id=plan["task_id"])
    assert res["body"]["decision"] == "reject", res
    approvals.the_decision(workdir, plan["task_id"], "plan reject", plan["plan_hash"])
    approvals.assert_rejected(workdir, [plan["task_id"]])


@pytest.mark.parametrize("script,transport,era", CASES)
def test_a_person_who_never_answers_in_time_decides_nothing(node_clients, serve, workdir, script, transport, era):
    plan = make_plan(workdir)
    target = serve(transport, {"BERNSTEIN_MCP_INPUT_EXPIRY_SECS": str(EXPIRY_SECS)})
    before = approvals.ledger_bytes(workdir)
    res = drive(node_clients, target, script, era, "approve_task", accept(approvals.APPROVE),
                task_id=plan["task_id"], elicit_delay_ms=str((EXPIRY_SECS + 1) * 1000))
    assert not res["approve"]["ok"], res
    error = res["approve"]["error"]
    if era == "modern":
        # The SDK retried with a requestState past its expiry.
        assert (error["code"], error["data"]) == (-32602, {"reason": "request_state_expired"}), error
    else:
        assert (error["code"], error["data"]) == (-32000, {"reason": "input_expired"}), error
    assert approvals.ledger_bytes(workdir) == before


@pytest.mark.parametrize("script,transport,era", CASES)
def test_a_host_without_elicitation_keeps_todays_flow(node_clients, serve, workdir, script, transport, era):
    plan = make_plan(workdir)
    # One server per client run: a recording holds one conversation.
    res = drive(node_clients, serve(transport), script, era, "approve_task", task_id=plan["task_id"])
    assert res["approve"]["ok"] and res["approve"]["value"]["isError"] is True, res
    assert res["body"]["error"] == "task_not_awaiting_approval", res
    assert "host that can elicit" in res["body"]["hint"], res
    own = drive(node_clients, serve(transport), script, era, "approve_task", task_id=plan["task_id"],
                approve_args=json.dumps({"decision": "approve"}))
    assert own["body"]["error"] == "plan_decided_by_person", own
    work = drive(node_clients, serve(transport), script, era, "approve_work")
    assert work["body"]["status"] == "done" and work["asked"] == [], work
    assert approvals.decisions(workdir) == []
    assert approvals.statuses(workdir)[plan["task_id"]] == "planned"


@pytest.mark.parametrize("script,transport,era", CASES)
@pytest.mark.parametrize("answer", ["reject", "decline"])
def test_finished_work_is_decided_on_the_form(node_clients, serve, workdir, script, transport, era, answer):
    form = {"action": "decline"} if answer == "decline" else accept({"decision": answer, "note": "redo"})
    res = drive(node_clients, serve(transport), script, era, "approve_work", form)
    [message] = res["asked"]
    assert res["taskId"] in message and "wrote the notes" in message, message
    now = approvals.statuses(workdir)[res["taskId"]]
    if answer == "decline":
        assert res["body"]["error"] == "approval_declined", res
        assert now == "pending_approval"
    else:
        assert res["body"]["status"] == "open" and res["body"]["reason"] == "approval rejected: redo", res
        assert now == "open"
