"""Fixtures of the dashboard tests: a real headless Chromium (one per session) and servers a
test can restart on the same port.

* `browser`: the system Chromium through Playwright (harness/browser.py).
* `tab(label)`: a fresh page (own context and sessionStorage); closed at teardown, which fails
  the test if the page threw or violated its Content Security Policy.
* `dash_server(label, port=0, env=None)`: a `bernstein mcp --transport http` on the test's
  workdir (dash_support.DashServer); every one is stopped at teardown.
"""

from __future__ import annotations

import pytest

from dash_support import DashServer
from harness import browser as browser_harness


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = browser_harness.launch(pw)
        yield b
        b.close()


@pytest.fixture
def tab(browser, request, runtime):
    opened: list[browser_harness.Tab] = []

    def open_tab(label: str = "page", **kw) -> browser_harness.Tab:
        t = browser_harness.Tab(browser, f"{request.node.originalname}-{runtime}-{label}", **kw)
        opened.append(t)
        return t

    yield open_tab
    for t in opened:
        t.close()


@pytest.fixture
def dash_server(launcher):
    started: list[DashServer] = []

    def start(label: str = "dash", **kw) -> DashServer:
        srv = DashServer(launcher, label, **kw)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
