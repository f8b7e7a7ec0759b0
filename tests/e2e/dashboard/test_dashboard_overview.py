"""The dashboard in a real Chromium, both runtimes: what a server with runs in several states
shows, and the verify box.

* Runs under way (its task claimed by a named claimer, with a mailbox message), completed,
  cancelled and a plan awaiting a decision: each row shows its goal and status, the expanded
  tree the claimer and lease, the selected task its mailbox (inserted as text, never HTML),
  the plan its rendering hash; the header's ledger head and record count equal the server's
  (`/readyz`); the call tallies count the calls made; the window selector reshapes the
  sparkline.
* A run handle the server returned verifies as valid, bare and as the host's JSON-RPC
  response; the same handle with one field changed is invalid; text that is not JSON is an
  error the page shows.
"""

from __future__ import annotations

import json

from dash_support import ready, run, tool
from harness.http_raw import HANDSHAKE, call_tool
from harness.payloads import refusal

CLAIMER = "dash-worker-7"
REFUSAL = "unknown_task"
MESSAGE = "found <b>it</b> & <script>x()</script> more"


def populate(base: str) -> dict:
    """Runs in four states; {name: (run_id, goal, status)}."""
    working = run(base, "dash: a run under way")
    assert tool(base, "bernstein_claim", {"claimer_id": CLAIMER})["taskId"] == working
    tool(base, "bernstein_post_message", {"task_id": working, "kind": "finding", "sender": CLAIMER, "body": MESSAGE})
    done = run(base, "dash: a finished run")
    assert tool(base, "bernstein_claim", {"claimer_id": "dash-finisher"})["taskId"] == done
    tool(base, "bernstein_complete", {"task_id": done, "result_summary": "all good", "claimer_id": "dash-finisher"})
    cancelled = run(base, "dash: a cancelled run")
    tool(base, "bernstein_cancel", {"task_id": cancelled, "reason": "not needed"})
    plan = run(base, "dash: a plan to decide", plan=True)
    refused = call_tool(base, "bernstein_cancel", {"task_id": "T-0000000000000000"}, version=HANDSHAKE)
    assert refusal(refused.rpc_response()["result"])["error"] == REFUSAL
    return {
        "working": (working, "dash: a run under way", "working"),
        "done": (done, "dash: a finished run", "completed"),
        "cancelled": (cancelled, "dash: a cancelled run", "cancelled"),
        "plan": (plan, "dash: a plan to decide", "input_required"),
    }


def open_loaded(tab, base: str, label: str, **kw):
    t = tab(label, **kw)
    t.page.goto(base + "/")
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    t.wait_visible(t.testid("run-row"))
    return t


def test_runs_tasks_ledger_and_calls_are_shown(dash_server, tab):
    srv = dash_server()
    runs = populate(srv.base)
    head = ready(srv.base)
    t = open_loaded(tab, srv.base, "states")
    page = t.page

    for run_id, goal, status in runs.values():
        row = t.testid("run-row", run_id=run_id)
        t.wait_attr(row, "data-status", status)
        assert t.text(f"{row} .goal") == goal
        assert t.text(f"{row} .status") == status.replace("_", " ")
    assert page.locator(t.testid("run-row")).count() == len(runs)

    # The header shows the server's ledger exactly: nothing was written since /readyz.
    t.wait_attr(t.testid("ledger-records"), "data-value", str(head["records"]))
    assert t.text(t.testid("ledger-head")) == head["head"]
    assert t.attr(t.testid("ledger-head"), "title") == head["head"]
    assert t.text(t.testid("ledger-verified")) == "yes"
    assert t.text(t.testid("ledger-store")) == "file"

    for status in ("claimed", "done", "cancelled", "planned"):
        assert t.attr(t.testid("status-count", status=status), "data-value") == "1", status

    # The plan waits for a decision, with the hash to decide it by.
    plan_id = runs["plan"][0]
    plan_hash = t.text(t.testid("plan-row", plan_id=plan_id) + " " + t.testid("plan-hash"))
    assert plan_hash.startswith("sha256:") and len(plan_hash) == len("sha256:") + 64, plan_hash

    # Calls made above, per tool, within the window; the refused one by its code.
    for name, n in (("bernstein_run", 4), ("bernstein_claim", 2), ("bernstein_cancel", 2),
                    ("bernstein_complete", 1), ("bernstein_post_message", 1)):
        assert t.attr(t.testid("tool-row", tool=name), "data-value") == str(n), name
    assert t.attr(t.testid("calls-total"), "data-value") == "10"
    assert t.attr(t.testid("calls-refused"), "data-value") == "1"
    assert t.attr(t.testid("refusal-row", code=REFUSAL), "data-value") == "1"
    t.screenshot("loaded")

    # The run under way: its tree shows who holds the task and until when.
    working = runs["working"][0]
    tree = t.testid("run-tasks", run_id=working)
    assert not page.locator(tree).is_visible()
    # (by keyboard: the toggle is a real button)
    page.focus(t.testid("run-row", run_id=working) + " .goal")
    page.keyboard.press("Enter")
    t.wait_visible(tree)
    assert t.attr(t.testid("run-row", run_id=working) + " .goal", "aria-expanded") == "true"
    task_row = f'{tree} {t.testid("task-row", task_id=working)}'
    assert t.text(f'{task_row} {t.testid("task-claimer")}') == CLAIMER
    assert t.text(f'{task_row} {t.testid("task-lease")}').startswith("in "), t.text(task_row)

    # Its mailbox: sender, kind and body as text (the markup in it stays characters).
    page.click(f'{task_row} {t.testid("task-select")}')
    entry = t.testid("mail-entry")
    t.wait_visible(entry)
    assert t.text(f'{entry} {t.testid("mail-sender")}') == CLAIMER
    assert t.text(f'{entry} {t.testid("mail-kind")}') == "finding"
    assert t.text(f'{entry} {t.testid("mail-body")}') == MESSAGE
    assert page.locator(f'{t.testid("mail-body")} b, {t.testid("mail-body")} script').count() == 0
    assert "valid" in t.text(f'{entry} {t.testid("mail-signature")}')
    field = t.testid("task-field", field="claimer")
    assert t.text(field) == CLAIMER
    t.screenshot("task-selected")

    # A shorter window: one sparkline point per minute of it.
    points = int(t.attr(t.testid("sparkline-svg"), "data-points"))
    page.select_option(t.testid("window"), "900")
    t.wait_attr(t.testid("sparkline-svg"), "data-points", str(points // 4))

    dark = open_loaded(tab, srv.base, "dark", color_scheme="dark")
    dark.screenshot("loaded")


def verdict(t, text: str) -> tuple[str, str]:
    """Pastes `text`, presses Verify, returns (data-valid, kind) once the answer is shown."""
    page = t.page
    page.evaluate("() => { document.querySelector('[data-testid=verify-result]').hidden = true; }")
    page.fill(t.testid("verify-input"), text)
    page.click(t.testid("verify-button"))
    t.wait_visible(t.testid("verify-result"))
    return t.attr(t.testid("verify-valid"), "data-valid"), t.text(t.testid("verify-kind"))


def test_verify_box_checks_a_run_handle(dash_server, tab):
    srv = dash_server()
    run_id = run(srv.base, "dash: a run to verify")
    reply = call_tool(srv.base, "bernstein_run_status", {"run_id": run_id}, version=HANDSHAKE)
    response = reply.rpc_response()
    handle = tool(srv.base, "bernstein_run_status", {"run_id": run_id})
    assert handle["runId"] == run_id and handle["status"] == "working", handle
    t = open_loaded(tab, srv.base, "verify")

    assert verdict(t, json.dumps(handle)) == ("true", "run handle")
    t.screenshot("valid")
    assert verdict(t, json.dumps(response)) == ("true", "run handle")
    tampered = {**handle, "status": "completed"}
    assert verdict(t, json.dumps(tampered)) == ("false", "run handle")
    assert t.text(t.testid("verify-summary")), "an invalid object must say why"
    t.screenshot("invalid")
    assert verdict(t, "not json at all")[0] == "error"
