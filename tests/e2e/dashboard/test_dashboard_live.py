"""The dashboard follows the ledger live, both runtimes, without reloading.

* Another process (a stdio server on the same workdir) starts a run and cancels one: the open
  page shows both through its `/api/events` stream, keyboard focus stays where it was, and a
  marker set on `window` after load is still there, so the page never navigated.
* The server is stopped and a new process started on the same port: the page says
  `reconnecting`, then `live` again by itself, and shows a run made on the new process.
* The read-only `bernstein dashboard` on the same workdir says it is read-only and follows
  what an MCP server writes.
"""

from __future__ import annotations

from dash_support import ready, run
from harness.payloads import ok_payload
from harness.raw import RawServer

MARKER = "() => { window.__dashMarker = 'loaded once'; }"
MARKED = "() => window.__dashMarker"
# Records every connection state the page shows, in order.
WATCH_STATES = """() => {
  const node = document.querySelector('[data-testid=conn-state]');
  window.__states = [node.dataset.state];
  new MutationObserver(() => {
    const s = node.dataset.state;
    if (window.__states[window.__states.length - 1] !== s) window.__states.push(s);
  }).observe(node, { attributes: true, attributeFilter: ['data-state'] });
}"""


def open_live(tab, base: str, label: str):
    t = tab(label)
    t.page.goto(base + "/")
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    t.wait_visible(t.testid("run-row"))
    t.page.evaluate(MARKER)
    return t


def test_changes_from_another_process_appear_without_reload(dash_server, tab, launcher):
    srv = dash_server()
    first = run(srv.base, "live: on the page from the start")
    t = open_live(tab, srv.base, "live")
    # Keyboard focus survives the redraws a live update causes.
    t.page.focus(t.testid("run-row", run_id=first) + " .goal")

    with RawServer.start(launcher, "writer") as writer:
        writer.initialize()
        made = ok_payload(writer.call_tool("bernstein_run", {"goal": "live: from another process"})["result"])
        row = t.testid("run-row", run_id=made["run_id"])
        t.wait_visible(row)
        assert t.text(f"{row} .goal") == "live: from another process"
        assert t.page.evaluate("() => document.activeElement.dataset.key") == f"run:{first}"
        ok_payload(writer.call_tool("bernstein_cancel", {"task_id": first, "reason": "live test"})["result"])
        t.wait_attr(t.testid("run-row", run_id=first), "data-status", "cancelled")
        code, _ = writer.close()
        assert code == 0

    assert t.page.evaluate(MARKED) == "loaded once", "the page navigated"
    t.wait_attr(t.testid("ledger-head"), "title", ready(srv.base)["head"])
    t.screenshot("updated")


def test_the_page_reconnects_to_a_restarted_server(dash_server, tab):
    first = dash_server("before")
    run(first.base, "restart: before")
    t = open_live(tab, first.base, "restart")
    t.page.evaluate(WATCH_STATES)

    first.stop()
    t.wait_attr(t.testid("conn-state"), "data-state", "reconnecting")
    t.screenshot("reconnecting")

    second = dash_server("after", port=first.port)
    made = run(second.base, "restart: after")
    t.wait_visible(t.testid("run-row", run_id=made))
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    states = t.page.evaluate("() => window.__states")
    assert states[0] == "live" and "reconnecting" in states and states[-1] == "live", states
    assert t.page.evaluate(MARKED) == "loaded once", "the page navigated"
    assert t.text(t.testid("ledger-head")) == ready(second.base)["head"]
    t.screenshot("reconnected")


def test_the_read_only_dashboard_follows_an_mcp_server(dash_server, tab):
    mcp = dash_server("mcp")
    first = run(mcp.base, "read-only: before the dashboard")
    board = dash_server("board", read_only=True)
    t = open_live(tab, board.base, "read-only")
    t.wait_visible(t.testid("read-only"))
    assert t.text(t.testid("run-row", run_id=first) + " .goal") == "read-only: before the dashboard"

    made = run(mcp.base, "read-only: written by the MCP server")
    t.wait_visible(t.testid("run-row", run_id=made))
    assert t.page.evaluate(MARKED) == "loaded once", "the page navigated"
    t.wait_attr(t.testid("ledger-head"), "title", ready(mcp.base)["head"])
    assert t.text(t.testid("ledger-head")) == ready(board.base)["head"]
    t.screenshot("followed")
