"""States of the dashboard a new user met (issue 38), in a real Chromium, both runtimes.

* The calls chart spans the width of its card (it used to stop at half of it).
* A ledger that does not verify: the page says so ("ledger does not verify", the server's
  reason in the banner, no data) as soon as the first answer arrives, and never "connecting"
  after it. A ledger still opening (a retryable 503, simulated by answering the page's first
  overview requests with the server's own not-ready body) shows "opening…" and then the data,
  by itself.
* The workers panel lists a claimer after a `bernstein_claim`, with its task, claim time and
  lease; a claim made while the page is open appears without a reload, first.
"""

from __future__ import annotations

import json

from dash_support import run, tool
from harness import ledger
from harness.http_raw import request

# Records, from before the page's scripts run, every connection state it shows ("state:text")
# and every /api/overview answer ("answer:STATUS"), in order.
WATCH = """(() => {
  window.__seen = [];
  const fetch0 = window.fetch;
  window.fetch = async (...args) => {
    const res = await fetch0(...args);
    if (String(args[0]).startsWith('/api/overview')) window.__seen.push('answer:' + res.status);
    return res;
  };
  document.addEventListener('DOMContentLoaded', () => {
    const node = document.querySelector('[data-testid=conn-state]');
    const note = () => window.__seen.push(node.dataset.state + ':' + node.textContent);
    note();
    new MutationObserver(note).observe(node, { attributes: true, childList: true, characterData: true, subtree: true });
  });
})()"""


def seen(t) -> list[str]:
    return t.page.evaluate("() => window.__seen")


def after_first_answer(events: list[str]) -> list[str]:
    first = next(i for i, e in enumerate(events) if e.startswith("answer:"))
    return [e for e in events[first:] if not e.startswith("answer:")]


def test_the_calls_chart_spans_its_card(dash_server, tab):
    srv = dash_server()
    run(srv.base, "chart: one call at least")
    t = tab("chart")
    t.page.goto(srv.base + "/")
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    t.wait_visible(t.testid("sparkline-svg"))
    measure = """() => {
      const svg = document.querySelector('[data-testid=sparkline-svg]');
      const card = svg.closest('.card');
      const cs = getComputedStyle(card);
      const inner = card.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      return [svg.getBoundingClientRect().width, inner];
    }"""
    for width in (1280, 700):
        t.page.set_viewport_size({"width": width, "height": 900})
        chart, card = t.page.evaluate(measure)
        assert card > 0 and chart >= 0.98 * card and chart <= card + 1, (width, chart, card)
    t.screenshot("chart")


def test_a_ledger_that_does_not_verify_says_so(dash_server, tab, launcher, workdir, tmp_path):
    srv = dash_server("before")
    run(srv.base, "soon tampered")
    srv.stop()
    copy = ledger.tampered_copy(workdir / ".sdd", tmp_path / "tampered", b"soon tampered", b"soon tampereD")
    bad = dash_server("tampered", workdir=copy.parent)
    answer = request(bad.base, "GET", "/api/overview")
    assert answer.status == 503, answer.body[:300]
    body = answer.json()
    assert body["status"] == "not_ready" and body["retryable"] is False, body
    reason = body["reason"]
    assert "does not verify" in reason, reason

    t = tab("not-verified")
    t.page.add_init_script(WATCH)
    t.page.goto(bad.base + "/")
    state = t.testid("conn-state")
    t.wait_attr(state, "data-state", "not_ready")
    assert t.text(state) == "ledger does not verify"
    assert t.attr(state, "title") == reason
    t.wait_visible(t.testid("load-error"))
    assert reason in t.text(t.testid("load-error"))
    assert not t.page.locator(t.testid("data")).is_visible()
    assert "soon tampere" not in t.page.content()
    # Long enough for a retry or a feed event to change it, were the page to: it must not.
    t.page.wait_for_timeout(3000)
    events = seen(t)
    shown = after_first_answer(events)
    assert shown and all(not e.startswith("connecting") for e in shown), events
    assert t.attr(state, "data-state") == "not_ready", events
    t.screenshot("not-verified")


def test_a_ledger_still_opening_shows_opening_then_the_data(dash_server, tab):
    srv = dash_server()
    run_id = run(srv.base, "opening: shown once open")
    t = tab("opening")
    t.page.add_init_script(WATCH)
    # The server's own body for a store still opening (store-file/src/opening.rs), twice.
    opening = {"status": "not_ready", "error": "not_ready", "retryable": True,
               "reason": "the ledger is still being opened and verified (0.4 s so far); retry shortly"}
    opening["message"] = opening["reason"]
    answered = []

    def overview(route):
        answered.append(route.request.url)
        if len(answered) <= 2:
            route.fulfill(status=503, content_type="application/json", headers={"Retry-After": "5"},
                          body=json.dumps(opening))
        else:
            route.continue_()

    t.page.route("**/api/overview*", overview)
    t.page.goto(srv.base + "/")
    t.wait_visible(t.testid("run-row", run_id=run_id))
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    assert t.page.locator(t.testid("load-error")).is_hidden()
    events = seen(t)
    shown = after_first_answer(events)
    assert "opening:opening…" in shown, events
    assert all(not e.startswith("connecting") for e in shown), events
    assert len(answered) >= 3, answered


def test_the_workers_panel_lists_claimers(dash_server, tab):
    srv = dash_server()
    first = run(srv.base, "workers: a task to hold")
    assert tool(srv.base, "bernstein_claim", {"claimer_id": "dash-claimer-1"})["taskId"] == first
    ov = request(srv.base, "GET", "/api/overview").json()
    rows = ov["workers"]["rows"]
    assert [r["claimer"] for r in rows] == ["dash-claimer-1"], rows
    expected = rows[0]
    assert expected["task"]["id"] == first and expected["holds_task"] is True, expected
    assert expected["lease_expires_at"] > ov["now"] and expected["claimed_at"] <= ov["now"], expected

    t = tab("workers")
    t.page.goto(srv.base + "/")
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    row = t.testid("worker-row", claimer="dash-claimer-1")
    t.wait_visible(row)
    assert t.text(f'{row} {t.testid("worker-claimer")}') == "dash-claimer-1"
    task = f'{row} {t.testid("worker-task")}'
    assert t.text(task) == expected["task"]["title"]
    assert t.attr(task, "data-task-id") == first
    assert t.text(f"{row} .status") == "claimed"
    claimed = f'{row} {t.testid("worker-claimed")}'
    assert t.attr(claimed, "data-ago") == str(expected["claimed_at"])
    assert t.text(claimed).endswith(" ago"), t.text(claimed)
    lease = f'{row} {t.testid("worker-lease")}'
    assert t.attr(lease, "data-until") == str(expected["lease_expires_at"])
    assert t.attr(lease, "data-expired") == "false"
    assert t.text(lease).startswith("in "), t.text(lease)
    assert "100" in t.text(t.testid("workers-note"))

    # A claim while the page is open: the new claimer appears, first, without a reload.
    second = run(srv.base, "workers: another task")
    assert tool(srv.base, "bernstein_claim", {"claimer_id": "dash-claimer-2"})["taskId"] == second
    row2 = t.testid("worker-row", claimer="dash-claimer-2")
    t.wait_visible(row2)
    assert t.attr(t.testid("worker-row"), "data-claimer") == "dash-claimer-2"
    assert t.attr(f'{row2} {t.testid("worker-task")}', "data-task-id") == second
    # Its task opens in the task panel.
    t.page.click(f'{row2} {t.testid("worker-task")}')
    t.wait_visible(t.testid("task-field", field="claimer"))
    assert t.text(t.testid("task-field", field="claimer")) == "dash-claimer-2"
    t.screenshot("workers")
