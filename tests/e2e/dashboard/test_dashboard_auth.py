"""The dashboard behind a bearer token (BERNSTEIN_MCP_TOKEN), both runtimes.

* Without a token the page shows the token form and no data: no run goal anywhere in its DOM;
  `/api/events` and `/api/overview` answer 401 with the structured error.
* A wrong token is refused (the form says so, still no data); the right one shows the runs.
* `#token=...` in the address works too, and leaves the address bar at once.
"""

from __future__ import annotations

import json

from dash_support import run
from harness.http_raw import request

TOKEN = "dash-secret-token-1234"
GOAL = "auth: a goal only a token holder sees"


def test_token_form_then_data(dash_server, tab):
    srv = dash_server(env={"BERNSTEIN_MCP_TOKEN": TOKEN})
    run_id = run(srv.base, GOAL, token=TOKEN)
    for path in ("/api/events", "/api/overview"):
        reply = request(srv.base, "GET", path, timeout=10)
        assert reply.status == 401, (path, reply.status, reply.body[:300])
        assert json.loads(reply.body)["error"] in ("unauthorized", "invalid_token"), reply.body

    t = tab("locked")
    page = t.page
    page.goto(srv.base + "/")
    t.wait_visible(t.testid("token-form"))
    t.wait_attr(t.testid("conn-state"), "data-state", "locked")
    assert GOAL not in page.content()
    assert page.locator(t.testid("run-row")).count() == 0
    assert not page.locator(t.testid("data")).is_visible()
    t.screenshot("token-form")

    page.fill(t.testid("token-input"), "not-the-token")
    page.click(t.testid("token-submit"))
    t.page.wait_for_function("() => document.querySelector('[data-testid=auth-error]').textContent !== ''")
    t.wait_visible(t.testid("token-form"))
    assert GOAL not in page.content()
    t.screenshot("token-refused")

    page.fill(t.testid("token-input"), TOKEN)
    page.click(t.testid("token-submit"))
    row = t.testid("run-row", run_id=run_id)
    t.wait_visible(row)
    assert t.text(f"{row} .goal") == GOAL
    t.wait_attr(t.testid("conn-state"), "data-state", "live")
    assert not page.locator(t.testid("auth")).is_visible()
    t.screenshot("unlocked")

    linked = tab("fragment")
    linked.page.goto(f"{srv.base}/#token={TOKEN}")
    linked.wait_visible(linked.testid("run-row", run_id=run_id))
    assert "token" not in linked.page.url, linked.page.url
