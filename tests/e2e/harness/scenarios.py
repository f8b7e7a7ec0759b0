"""Client-side scenarios shared by both SDK majors.

`mcp<2`'s `ClientSession` and `mcp>=2`'s `Client` expose the same calls for what these
scenarios need (`call_tool`, `list_tools`, `list_prompts`, `get_prompt`, `list_resources`,
`read_resource`), so each scenario is written once and run in both eras. Results are
compared as JSON dumps (camelCase, by alias) so that model differences between the majors do
not matter. A protocol-level error is the SDK's exception type with an `.error` holding
`code` and `message`.

Scenarios assert on Bernstein's documented interface only (field names of the run handle,
the status counts, the refusal shape), never on wording.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from .payloads import find_values, mentions, outcome, refusal


def protocol_error_type() -> type[Exception]:
    try:
        from mcp.shared.exceptions import MCPError  # mcp>=2

        return MCPError
    except ImportError:
        from mcp.shared.exceptions import McpError  # mcp<2

        return McpError


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def tool(client, name: str, arguments: dict | None = None):
    return outcome(await client.call_tool(name, arguments or {}))


async def ok(client, name: str, arguments: dict | None = None):
    o = await tool(client, name, arguments)
    assert not o.is_error, f"{name} {arguments} failed: {o.text[:500]}"
    return o.payload


async def refused(client, name: str, arguments: dict) -> dict:
    """The structured refusal `{error, message, hint}` of a call that must be refused.

    Per MCP 2025-11-25 and 2026-07-28 (tools, "Error Handling"), input validation errors are
    tool execution errors (`isError: true`), not JSON-RPC errors; the brief's contract is the
    same for every refusal.
    """
    try:
        result = await client.call_tool(name, arguments)
    except protocol_error_type() as e:
        raise AssertionError(
            f"answered with JSON-RPC error {e.error.code} ({e.error.message!r}) instead of an "
            "isError tool result carrying {error, message, hint}"
        ) from None
    return refusal(result)


async def protocol_error(awaitable) -> object:
    """Awaits something that must fail with a JSON-RPC error; returns the error data."""
    err_type = protocol_error_type()
    try:
        value = await awaitable
    except err_type as e:
        assert e.error.message, e
        return e.error
    raise AssertionError(f"expected a protocol error, got {value!r}")


async def tool_names(client) -> list[str]:
    return [t["name"] for t in dump(await client.list_tools())["tools"]]


RUN_FIELDS = {"task_id", "title", "status", "run_id", "poll_after_ms"}
HANDLE_FIELDS = {
    "taskId",
    "runId",
    "status",
    "journalHead",
    "chainHead",
    "specRevision",
    "receiptHash",
    "pollToken",
}
RUN_STATES = {"working", "input_required", "completed", "failed", "cancelled"}


def _b64(token: str) -> bytes:
    padded = token + "=" * (-len(token) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decode(padded)
        except (binascii.Error, ValueError):
            continue
    raise AssertionError(f"pollToken is not base64: {token!r}")


async def run_poll_cancel(client) -> None:
    """run -> run_status (working, twice byte-identical, by run id and task id) -> cancel ->
    run_status cancelled, with status counts before and after. Expects the meter OFF."""
    before = await ok(client, "bernstein_status")
    counts0 = before["counts"]
    for key in ("total", "open", "claimed", "done", "failed"):
        assert isinstance(counts0.get(key), int), f"counts.{key} missing: {before}"
    assert {"live", "cost"} <= set(before), before

    run = await ok(client, "bernstein_run", {"goal": "Write the release notes for 0.1", "role": "backend"})
    assert RUN_FIELDS <= set(run), run
    assert isinstance(run["poll_after_ms"], int) and run["poll_after_ms"] > 0, run
    assert run["title"], run

    first = await tool(client, "bernstein_run_status", {"run_id": run["run_id"]})
    second = await tool(client, "bernstein_run_status", {"run_id": run["run_id"]})
    assert not first.is_error, first.text
    assert first.text == second.text, "two polls of an unchanged run must be byte-identical"
    handle = first.payload
    assert HANDLE_FIELDS <= set(handle), handle
    assert handle["status"] == "working", handle
    assert handle["runId"] == run["run_id"] and handle["taskId"] == run["task_id"], (handle, run)
    token = _b64(handle["pollToken"])
    assert run["run_id"].encode() in token or run["task_id"].encode() in token, token

    by_task = await tool(client, "bernstein_run_status", {"run_id": run["task_id"]})
    assert by_task.payload == handle, "run_status by task id must give the same handle"

    during = await ok(client, "bernstein_status")
    assert during["counts"]["total"] == counts0["total"] + 1, during
    if run["status"] in during["counts"]:
        assert during["counts"][run["status"]] == counts0.get(run["status"], 0) + 1, during

    cancelled = await ok(client, "bernstein_cancel", {"task_id": run["task_id"], "reason": "e2e: not needed"})
    assert mentions(cancelled, run["task_id"]), cancelled

    after = await tool(client, "bernstein_run_status", {"run_id": run["run_id"]})
    again = await tool(client, "bernstein_run_status", {"run_id": run["run_id"]})
    assert after.payload["status"] == "cancelled", after.payload
    assert after.text == again.text
    assert after.payload["receiptHash"] != handle["receiptHash"]
    assert after.payload["journalHead"] != handle["journalHead"]
    assert after.payload["runId"] == handle["runId"]

    final = await ok(client, "bernstein_status")
    assert final["counts"]["total"] == counts0["total"] + 1, final
    if run["status"] in final["counts"]:
        assert final["counts"][run["status"]] == counts0.get(run["status"], 0), final

    # Cancelling again reports the terminal status instead of cancelling twice.
    second_cancel = await tool(client, "bernstein_cancel", {"task_id": run["task_id"]})
    assert mentions(second_cancel.payload, "cancelled"), second_cancel.text
    assert (await tool(client, "bernstein_run_status", {"run_id": run["run_id"]})).text == after.text


async def subtask_tree_cancel(client) -> None:
    """Cancelling a task cancels its whole subtask tree and nothing else."""
    root = await ok(client, "bernstein_run", {"goal": "root of a tree"})
    child = await ok(client, "bernstein_run", {"goal": "child", "parent_task_id": root["task_id"]})
    grandchild = await ok(client, "bernstein_run", {"goal": "grandchild", "parent_task_id": child["task_id"]})
    bystander = await ok(client, "bernstein_run", {"goal": "unrelated"})

    answer = await ok(client, "bernstein_cancel", {"task_id": root["task_id"], "reason": "tree"})
    assert mentions(answer, root["task_id"]), answer
    counts = [v for k, v in _flatten(answer) if isinstance(v, int) and re.search("desc|cancel|count", k)]
    assert 2 in counts, f"cancel must report 2 cancelled descendants: {answer}"

    for task in (root, child, grandchild):
        handle = await ok(client, "bernstein_run_status", {"run_id": task["run_id"]})
        assert handle["status"] == "cancelled", (task, handle)
    assert (await ok(client, "bernstein_run_status", {"run_id": bystander["run_id"]}))["status"] == "working"

    detail = await ok(client, "bernstein_status", {"detail": True})
    for task in (root, child, grandchild, bystander):
        assert mentions(detail, task["task_id"]), f"detail=true must list {task['task_id']}"
    only_cancelled = await ok(client, "bernstein_status", {"status": "cancelled", "detail": True})
    for task in (root, child, grandchild):
        assert mentions(only_cancelled, task["task_id"]), only_cancelled
    assert not mentions(only_cancelled, bystander["task_id"]), "status filter let an open task through"

    # Unknown ids and path-like ids: refused, nothing changes.
    before = await ok(client, "bernstein_status")
    for bad in ("T-does-not-exist", "../x", "..", "a/b"):
        err = await refused(client, "bernstein_cancel", {"task_id": bad})
        assert err["error"], err
    assert await ok(client, "bernstein_status") == before


def _flatten(obj, prefix: str = ""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else k)
    else:
        yield prefix, obj


BAD_RUN_ARGUMENTS = [
    ("missing goal", {}),
    ("empty goal", {"goal": ""}),
    ("goal too long", {"goal": "g" * 8193}),
    ("goal wrong type", {"goal": 5}),
    ("goal is a list", {"goal": ["a", "b"]}),
    ("unknown field", {"goal": "fine", "surprise": True}),
    ("estimated_minutes wrong type", {"goal": "fine", "estimated_minutes": "ten"}),
    ("unknown parent", {"goal": "fine", "parent_task_id": "T-no-such-parent"}),
]

BAD_RUN_STATUS_ARGUMENTS = [
    ("missing run_id", {}),
    ("path-like run id", {"run_id": "../x"}),
    ("absolute path run id", {"run_id": "/etc/passwd"}),
    ("unknown run id", {"run_id": "R-no-such-run"}),
    ("run id wrong type", {"run_id": 7}),
]

BAD_STATUS_ARGUMENTS = [
    ("detail wrong type", {"detail": "yes"}),
    ("status wrong type", {"status": 5}),
    ("unknown field", {"unexpected": 1}),
]


async def bad_arguments_are_refused(client) -> None:
    """Every bad argument set is a structured refusal and writes nothing."""
    before = await ok(client, "bernstein_status")
    cases = [("bernstein_run", label, args) for label, args in BAD_RUN_ARGUMENTS]
    cases += [("bernstein_run_status", label, args) for label, args in BAD_RUN_STATUS_ARGUMENTS]
    cases += [("bernstein_status", label, args) for label, args in BAD_STATUS_ARGUMENTS]
    wrong = []
    for name, label, args in cases:
        try:
            await refused(client, name, args)
        except AssertionError as e:
            wrong.append(f"{name} with {label}: {e}")
    assert not wrong, "bad arguments not refused as structured tool errors:\n" + "\n".join(wrong)
    assert await ok(client, "bernstein_status") == before, "a refused call changed the ledger"
    # The boundary itself is accepted.
    edge = await ok(client, "bernstein_run", {"goal": "g" * 8192})
    assert RUN_FIELDS <= set(edge)


PROMPTS = {"orchestrate_goal", "triage_failed_tasks", "cost_recap"}


async def prompts_render(client, registered_tools: set[str]) -> None:
    listing = dump(await client.list_prompts())
    by_name = {p["name"]: p for p in listing["prompts"]}
    assert PROMPTS <= set(by_name), sorted(by_name)
    args = {a["name"]: a for a in by_name["orchestrate_goal"].get("arguments", [])}
    assert args.get("goal", {}).get("required") is True, args
    assert {"role", "scope"} <= set(args), args
    assert not args["role"].get("required", False) and not args["scope"].get("required", False)
    assert "limit" in {a["name"] for a in by_name["triage_failed_tasks"].get("arguments", [])}
    assert "window" in {a["name"] for a in by_name["cost_recap"].get("arguments", [])}

    goal = "Migrate the billing service to the new queue"
    first = dump(await client.get_prompt("orchestrate_goal", {"goal": goal, "role": "backend"}))
    second = dump(await client.get_prompt("orchestrate_goal", {"goal": goal, "role": "backend"}))
    assert first == second, "prompt rendering must be deterministic"
    assert first["messages"], first
    text = json.dumps(first)
    assert goal in text, "the rendered prompt must carry the goal"

    rendered = [text]
    for name, arguments in (
        ("triage_failed_tasks", {}),
        ("triage_failed_tasks", {"limit": "3"}),
        ("cost_recap", {}),
    ):
        result = dump(await client.get_prompt(name, arguments))
        assert result["messages"], (name, result)
        rendered.append(json.dumps(result))
    for blob in rendered:
        named = set(re.findall(r"\bbernstein_[a-z_]+\b", blob))
        assert named <= registered_tools, f"a prompt names unregistered tools: {sorted(named - registered_tools)}"

    await protocol_error(client.get_prompt("orchestrate_goal", {"role": "no goal given"}))
    await protocol_error(client.get_prompt("no_such_prompt", {}))


CAPABILITY_URI = "bernstein://capability"


async def read_card(client) -> dict:
    result = dump(await client.read_resource(CAPABILITY_URI))
    contents = result["contents"]
    assert len(contents) == 1 and contents[0]["uri"] == CAPABILITY_URI, contents
    assert "text" in contents[0], contents
    card = json.loads(contents[0]["text"])
    assert isinstance(card, dict) and card, card
    return card


def card_tier(card: dict) -> set[str]:
    """Values the card gives for its active tier (keys naming a tier, string values)."""
    return {v for k, v in _flatten(card) if isinstance(v, str) and re.search(r"tier", k, re.I)}


async def capability_resource(client, tier: str) -> dict:
    listing = dump(await client.list_resources())
    uris = [r["uri"] for r in listing["resources"]]
    assert CAPABILITY_URI in uris, uris
    card = await read_card(client)
    assert tier in card_tier(card), f"card does not give the active tier {tier!r}: {card}"
    assert mentions(card, "stdio"), "the card must list the stdio transport"
    for prompt in PROMPTS:
        assert mentions(card, prompt), f"the card's prompt catalogue lacks {prompt}"
    assert find_values(card, "tiers") or mentions(card, "standard"), card
    await protocol_error(client.read_resource("bernstein://no-such-resource"))
    return card
