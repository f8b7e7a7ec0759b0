"""A real headless Chromium for the dashboard tests, driven by Python Playwright.

The browser is the distribution's own build (`/usr/bin/chromium` on Debian, or
$BERNSTEIN_E2E_CHROMIUM); Playwright never downloads one. `launch()` starts it once per test
session; `Tab` wraps one page of a fresh browser context (its own cookies and
sessionStorage) and records what a test must not ignore: uncaught script errors and Content
Security Policy violations, which `Tab.close()` turns into a failure. Screenshots go under
`.cache/test-logs/dashboard/` at the repository root (not tracked) and their path is printed.

Waits are Playwright's own (selectors and predicates polled by the browser up to a timeout);
nothing here sleeps.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .launch import REPO_ROOT

DEFAULT_CHROMIUM = "/usr/bin/chromium"
SCREENSHOT_DIR = REPO_ROOT / ".cache" / "test-logs" / "dashboard"
# Longest wait for something the page should show (a live update, a reconnect).
WAIT_MS = 20_000


def chromium_path() -> Path:
    return Path(os.environ.get("BERNSTEIN_E2E_CHROMIUM") or DEFAULT_CHROMIUM)


def launch(playwright):
    """The system Chromium, headless. `--no-sandbox`: CI runs as root, where Chromium's
    sandbox refuses to start."""
    path = chromium_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: install Debian's chromium (scripts/test.sh does)")
    return playwright.chromium.launch(executable_path=str(path), headless=True, args=["--no-sandbox"])


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


class Tab:
    """One page in its own browser context, with its script errors and CSP reports kept."""

    def __init__(self, browser, label: str, *, color_scheme: str = "light"):
        self.label = _safe(label)
        self.context = browser.new_context(color_scheme=color_scheme, viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(WAIT_MS)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.console: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("console", self._on_console)

    def _on_console(self, msg) -> None:
        text = msg.text
        self.console.append(f"{msg.type}: {text}")
        if "Content Security Policy" in text or "Refused to" in text:
            self.errors.append(f"csp: {text}")

    # -- reading the page ----------------------------------------------------------------

    def testid(self, testid: str, **attrs: str) -> str:
        """A CSS selector for `[data-testid=testid]` with the given `data-*` attributes."""
        sel = f'[data-testid="{testid}"]'
        for k, v in attrs.items():
            sel += f'[data-{k.replace("_", "-")}="{v}"]'
        return sel

    def text(self, selector: str) -> str:
        return self.page.locator(selector).first.text_content() or ""

    def attr(self, selector: str, name: str) -> str | None:
        return self.page.locator(selector).first.get_attribute(name)

    def wait_attr(self, selector: str, name: str, value: str, timeout: int = WAIT_MS) -> None:
        """Waits until the first element matching `selector` has `name` = `value`."""
        self.page.wait_for_function(
            "([sel, name, value]) => { const n = document.querySelector(sel);"
            " return n !== null && n.getAttribute(name) === value; }",
            arg=[selector, name, value],
            timeout=timeout,
        )

    def wait_visible(self, selector: str, timeout: int = WAIT_MS) -> None:
        self.page.wait_for_selector(selector, state="visible", timeout=timeout)

    # -- evidence ------------------------------------------------------------------------

    def screenshot(self, state: str) -> Path:
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOT_DIR / f"{self.label}-{_safe(state)}.png"
        self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path

    def close(self) -> None:
        """Closes the context; fails if the page threw or broke its Content Security Policy."""
        self.context.close()
        assert not self.errors, "the page reported errors:\n" + "\n".join(self.errors + self.console[-20:])
