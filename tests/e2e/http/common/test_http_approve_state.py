"""The `requestState` of `bernstein_approve`'s form (2026-07-28), attacked over raw HTTP on both
runtimes: the client holds the token that says which plan hash the person was shown, so every
retry is hostile input. A tampered token (its tag, or its readable payload re-encoded with
another hash) and an expired one are refused with `-32602` before the tool runs: the ledger is
byte-identical. A replay of a valid answer after it decided the plan reaches the tool (the
server keeps nothing to tell a replay from a retry) and is refused as stale: no decision is
recorded again, only the refused call's audit record.
"""

from __future__ import annotations

import base64
import json
import time

from harness import approvals
from harness.http_raw import CAPS_META, MODERN, call_tool, rpc

EXPIRY_SECS = 2
CAN_ELICIT = {"_meta": {CAPS_META: {"elicitation": {}}}}


def call(srv, name: str, arguments: dict, **params) -> dict:
    """A tools/call from a host that can elicit: the JSON-RPC response, its HTTP status checked
    (400 for a refused requestState, 200 otherwise)."""
    body = {"name": name, "arguments": arguments, **CAN_ELICIT, **params}
    reply = rpc(srv.direct_base, "tools/call", body, version=MODERN)
    response = reply.rpc_response()
    assert reply.status == (400 if "error" in response else 200), (reply.status, reply.body[:500])
    return response


def payload(response: dict) -> dict:
    doc = json.loads(response["result"]["content"][0]["text"])
    return doc.get("result", doc) if isinstance(doc, dict) else doc


def ask(srv, workdir) -> tuple[str, dict]:
    """A plan, and the form `bernstein_approve` answers about it with."""
    plan = call_tool(srv.direct_base, "bernstein_run", {"goal": "Ship the migration", "plan": True}, version=MODERN)
    plan_id = payload(plan.rpc_response())["task_id"]
    asked = call(srv, "bernstein_approve", {"task_id": plan_id})["result"]
    assert asked["resultType"] == "input_required", asked
    assert asked["inputRequests"]["approval"]["method"] == "elicitation/create", asked
    return plan_id, asked


def retry(srv, plan_id: str, state: str, decision: str = "approve") -> dict:
    answer = {"approval": {"action": "accept", "content": {"decision": decision}}}
    return call(srv, "bernstein_approve", {"task_id": plan_id}, inputResponses=answer, requestState=state)


def refused(response: dict, reason: str) -> None:
    assert response.get("error", {}).get("code") == -32602, response
    assert response["error"]["data"]["reason"] == reason, response


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_a_tampered_state_is_refused_and_writes_nothing(http_server, workdir):
    srv = http_server("approve-tampered")
    plan_id, asked = ask(srv, workdir)
    state = asked["requestState"]
    version, body, tag = state.split(".")
    before = approvals.ledger_bytes(workdir)
    # The tag changed.
    flipped = tag[:-1] + ("0" if tag[-1] != "0" else "1")
    refused(retry(srv, plan_id, f"{version}.{body}.{flipped}"), "request_state_forged")
    # The readable payload changed: another hash than the one shown, the old tag kept.
    text = json.dumps(json.loads(unb64(body)))
    forged = text.replace('"plan_hash": "sha256:', '"plan_hash": "sha256:0')
    assert forged != text, text
    refused(retry(srv, plan_id, f"{version}.{b64(forged.encode())}.{tag}"), "request_state_forged")
    assert approvals.statuses(workdir)[plan_id] == "planned"
    assert approvals.ledger_bytes(workdir) == before
    # The untouched state still decides.
    assert payload(retry(srv, plan_id, state))["decision"] == "approve"


def test_an_expired_state_is_refused_and_writes_nothing(http_server, workdir):
    srv = http_server("approve-expired", env={"BERNSTEIN_MCP_INPUT_EXPIRY_SECS": str(EXPIRY_SECS)})
    plan_id, asked = ask(srv, workdir)
    before = approvals.ledger_bytes(workdir)
    time.sleep(EXPIRY_SECS + 1)  # the person answers after the expiry
    refused(retry(srv, plan_id, asked["requestState"]), "request_state_expired")
    assert approvals.ledger_bytes(workdir) == before
    assert approvals.statuses(workdir)[plan_id] == "planned"


def test_a_replayed_answer_decides_nothing_again(http_server, workdir):
    srv = http_server("approve-replayed")
    plan_id, asked = ask(srv, workdir)
    decided = payload(retry(srv, plan_id, asked["requestState"], "reject"))
    assert decided["decision"] == "reject", decided
    before = approvals.ledger_bytes(workdir)
    again = retry(srv, plan_id, asked["requestState"], "approve")
    assert again["result"]["isError"] is True, again
    assert payload(again)["error"] == "approval_stale", again
    new = approvals.records(workdir)[before.count(b"\n"):]
    assert [(r["kind"], r["body"]["ok"], r["body"].get("error")) for r in new] == [
        ("mcp.stateless_call", False, "approval_stale")
    ], new
    assert len(approvals.decisions(workdir)) == 1
    assert approvals.statuses(workdir)[plan_id] == "cancelled"
