"""Assertions on the JSON reports of the Node drivers (clients/*.mjs), shared by the SDK and
Inspector tests. They check Bernstein's documented interface (field names, shapes, refusals),
never wording, except the clients' own warning texts, which are what the issue is about."""

from __future__ import annotations

import json
import re

from harness.payloads import outcome, refusal

HANDSHAKE_REVISIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
MODERN = "2026-07-28"
RUN_FIELDS = {"task_id", "run_id", "poll_after_ms"}
PROMPTS = {"orchestrate_goal", "triage_failed_tasks", "cost_recap"}
CORE_TOOLS = {"bernstein_run", "bernstein_run_status", "bernstein_cancel", "bernstein_status"}
UNKNOWN_FORMAT = re.compile(r"unknown format", re.I)


def connected(report: dict) -> dict:
    """The report of a driver that connected and finished its scenario."""
    assert report.get("ok"), (
        f"the client failed: {report.get('error')}\nclient errors: {report.get('errors')}\n"
        f"stderr: {report.get('stderr', '')[-1500:]}"
    )
    return report


def no_unknown_formats(*texts: str | list[str]) -> None:
    lines: list[str] = []
    for t in texts:
        lines.extend(t if isinstance(t, list) else t.splitlines())
    bad = [ln for ln in lines if UNKNOWN_FORMAT.search(ln)]
    assert not bad, f"{len(bad)} 'unknown format' warnings from the client's schema validator, e.g. {bad[:3]}"


def run_handle(result: dict) -> dict:
    """The immediate run JSON of a plain `bernstein_run` call (never a task to poll)."""
    assert result.get("resultType", "complete") == "complete" and "task" not in result, (
        f"bernstein_run answered a plain call with a task instead of the run JSON: {json.dumps(result)[:600]}"
    )
    o = outcome(result)
    assert not o.is_error, o.text[:500]
    assert isinstance(o.payload, dict) and RUN_FIELDS <= set(o.payload), o.payload
    assert isinstance(o.payload["poll_after_ms"], int) and o.payload["poll_after_ms"] > 0, o.payload
    return o.payload


def loop(steps: dict) -> None:
    """run → run_status (working, twice the same) → cancel → run_status cancelled."""
    run = run_handle(steps["run"])
    first, second = outcome(steps["status1"]).payload, outcome(steps["status2"]).payload
    assert first == second, "two polls of an unchanged run must give the same handle"
    assert first["status"] == "working" and first["runId"] == run["run_id"] and first["taskId"] == run["task_id"], first
    assert not outcome(steps["cancel"]).is_error, outcome(steps["cancel"]).text
    after = outcome(steps["after"]).payload
    assert after["status"] == "cancelled" and after["runId"] == run["run_id"], after


def progress(steps: dict) -> None:
    """A run_status poll with a progressToken: the client receives the tick as progress."""
    run_handle(steps["run"])
    assert not outcome(steps["status"]).is_error, outcome(steps["status"]).text
    assert not steps["unknownToken"], f"the client dropped the progress: {steps['unknownToken'][0][:400]}"
    events = steps["progress"]
    assert events, "no progress notification reached the client's onprogress for the poll's token"
    assert all(not e["afterResult"] for e in events), events
    assert all(isinstance(e.get("progress"), (int, float)) for e in events), events


def surface(result: dict) -> None:
    """tools/list, the capability resource, prompts (listing, rendering, an unknown one)."""
    assert CORE_TOOLS <= set(result["tools"]), result["tools"]
    assert "bernstein://capability" in result["resources"], result["resources"]
    contents = result["card"]["contents"]
    assert len(contents) == 1 and contents[0]["uri"] == "bernstein://capability", contents
    card = json.loads(contents[0]["text"])
    blob = json.dumps(card)
    for name in PROMPTS:
        assert name in blob, f"the capability card does not list the prompt {name}"
    assert PROMPTS <= set(result["prompts"]), result["prompts"]
    messages = result["prompt"]["messages"]
    assert messages and "Migrate the billing service to the new queue" in json.dumps(messages), messages
    assert not result["missingPrompt"]["ok"], "an unknown prompt must be a protocol error"
    assert not result["missingResource"]["ok"], "an unknown resource must be a protocol error"


def bad_arguments(result: dict) -> None:
    """Bad arguments: structured isError refusals; an unknown tool: an error; nothing changed."""
    for case in ("goalWrongType", "missingRunId", "unknownField"):
        got = result[case]
        assert got["ok"], f"{case}: the client raised {got['error']} instead of receiving an isError result"
        refusal(got["value"])
    unknown = result["unknownTool"]
    if unknown["ok"]:
        assert outcome(unknown["value"]).is_error, unknown
    counts = outcome(result["statusAfter"]).payload["counts"]
    assert counts["total"] == 0, f"a refused call changed the ledger: {counts}"


def resources(steps: dict) -> None:
    """The run templates listed, the run's resource_link followed to what bernstein_run_status
    answers, its id completed, an unknown run a protocol error."""
    templates = {t["uriTemplate"] for t in steps["templates"]["resourceTemplates"]}
    assert "bernstein://runs/{run_id}" in templates and "bernstein://tasks/{task_id}" in templates, templates
    run = run_handle(steps["run"])
    assert "read" in steps, f"bernstein_run carried no resource_link: {json.dumps(steps['run'])[:600]}"
    [content] = steps["read"]["contents"]
    assert content["uri"] == f"bernstein://runs/{run['run_id']}" and content["mimeType"] == "application/json"
    assert json.loads(content["text"]) == outcome(steps["status"]).payload
    assert steps["complete"]["completion"]["values"] == [run["run_id"]], steps["complete"]
    assert not steps["missing"]["ok"], "an unknown run must be a protocol error"
