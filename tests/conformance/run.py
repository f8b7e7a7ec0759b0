#!/usr/bin/env python3
"""Runs the official MCP conformance suite against Bernstein and checks the expected failures.

What it does:
1. installs, once, into <repo>/.cache: Node 22 (npm package `node@22`) and
   `@modelcontextprotocol/conformance@0.2.0-alpha.12` (no global installs);
2. starts the test-only fixture server (`bernstein-conformance-fixture`, same engine and HTTP
   runtimes, the suite's fixture catalogue) and `bernstein mcp --transport http`, each on each
   runtime (std, smol), on a free port in a fresh workdir;
3. runs `conformance server --url ... --requirements REV` for REV in 2025-11-25 and 2026-07-28
   against each; the fixture server is judged on every scenario, the real server on the
   scenarios about its own surface (SURFACE below: the others need fixture tools);
4. exits non-zero when any check fails, and when expected-failures.txt lists anything: that
   file must stay empty (a failing scenario is a bug to fix, never an entry).

Stdlib only. Knobs: BERNSTEIN_BIN (else $CARGO_TARGET_DIR/debug/bernstein, else
target/debug/bernstein), BERNSTEIN_CONFORMANCE_FIXTURE_BIN (same rule), CONFORMANCE_RUNTIMES
(default std,smol), CONFORMANCE_REVISIONS (default 2025-11-25,2026-07-28). The last line is
"conformance: N passed, N failed, N skipped" (scenario runs). Each scenario run is listed as
`ok` or `FAIL`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
from harness import node  # noqa: E402  (Node 22 and npm installs, shared with tests/e2e/node)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = ROOT / ".cache"
SUITE_VERSION = "0.2.0-alpha.12"
SUITE_PACKAGE = f"@modelcontextprotocol/conformance@{SUITE_VERSION}"
EXPECTED = HERE / "expected-failures.txt"
READY = re.compile(r"serving MCP over HTTP at http://(\S+)/mcp")
RESULT_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
FAILING = {"FAILURE"}  # WARNING (a SHOULD) is reported but does not fail

# Scenarios about Bernstein's own surface (lifecycle, listings, HTTP and header rules), run
# against the real server. Everything else needs the suite's fixture tools/resources/prompts.
SURFACE = {
    "server-initialize",
    "server-session-lifecycle",
    "server-stateless",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "sep-2164-resource-not-found",
    "dns-rebinding-protection",
    "caching",
    "http-header-validation",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "input-required-result-unsupported-methods",
    "input-required-result-validate-input",
}

# Checks of surface scenarios that call the suite's diagnostic tools (`test_missing_capability`,
# `test_streaming_elicitation`, `test_logging_tool`). Only the fixture offers those tools (the
# production server never grows test tools), so these checks are judged on the fixture: on a
# server target they are set aside, and the run fails unless the fixture passed each of them in
# the same scenario and revision.
FIXTURE_JUDGED = {
    "sep-2575-server-rejects-undeclared-capability",
    "sep-2575-missing-capability-http-400",
    "sep-2575-http-server-no-independent-requests-on-stream",
    "sep-2575-server-no-log-without-loglevel",
}


def log(msg: str) -> None:
    print(msg, flush=True)


# ---- installs ---------------------------------------------------------------------------------


def ensure_suite() -> tuple[list[str], dict[str, str]]:
    """(argv prefix of the conformance CLI, environment with Node 22 first on PATH)."""
    bin_dir, env = node.ensure_node(CACHE)
    pkg = CACHE / "conformance" / "node_modules" / "@modelcontextprotocol" / "conformance"
    try:
        have = json.loads((pkg / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        have = None
    if have != SUITE_VERSION:
        log(f"installing {SUITE_PACKAGE} into .cache/conformance")
        node.npm_install(CACHE / "conformance", SUITE_PACKAGE, env)
    main = pkg / "dist" / "index.js"
    return [str(bin_dir / "node"), str(main)], env


# ---- servers ----------------------------------------------------------------------------------


def binary(env_name: str, name: str) -> Path:
    explicit = os.environ.get(env_name)
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    if not target.is_absolute():
        target = ROOT / target
    return target / "debug" / name


@dataclass
class Running:
    label: str
    proc: subprocess.Popen
    url: str
    workdir: Path
    stderr_path: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(label: str, argv: list[str], workdir: Path, logs: Path) -> Running:
    stderr_path = logs / f"{label}.stderr.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERNSTEIN_")}
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=env, cwd=str(workdir))
    deadline = time.monotonic() + 60
    while True:
        text = stderr_path.read_text(errors="replace")
        m = READY.search(text)
        if m:
            return Running(label, proc, f"http://{m.group(1)}/mcp", workdir, stderr_path)
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{label} did not start (exit {proc.poll()}): {text[-2000:]}")
        time.sleep(0.02)  # polling the readiness line


# ---- results ----------------------------------------------------------------------------------


@dataclass
class ScenarioResult:
    target: str  # fixture-std | fixture-smol | server-std | server-smol
    revision: str
    scenario: str
    failing_checks: set[str] = field(default_factory=set)
    messages: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Failing checks set aside on a server target because the fixture judges them.
    on_fixture: set[str] = field(default_factory=set)

    @property
    def is_fixture(self) -> bool:
        return self.target.startswith("fixture")

    @property
    def runtime(self) -> str:
        return self.target.split("-", 1)[1]


def read_results(outdir: Path, target: str, revision: str, only: set[str] | None) -> list[ScenarioResult]:
    results = []
    for checks in sorted(outdir.glob("*/checks.json")):
        m = RESULT_DIR.match(checks.parent.name)
        if not m:
            continue
        scenario = m.group(1)
        if only is not None and scenario not in only:
            continue
        r = ScenarioResult(target, revision, scenario)
        try:
            items = json.loads(checks.read_text())
        except ValueError:
            items = [{"id": scenario, "status": "FAILURE", "errorMessage": "unreadable checks.json"}]
        for c in items:
            status = c.get("status")
            if status in FAILING and not target.startswith("fixture") and c.get("id") in FIXTURE_JUDGED:
                r.on_fixture.add(c["id"])
            elif status in FAILING:
                r.failing_checks.add(c.get("id", "?"))
                r.messages[c.get("id", "?")] = str(c.get("errorMessage") or c.get("description") or "")[:300]
            elif status == "WARNING":
                r.warnings.append(f"{c.get('id')}: {str(c.get('errorMessage') or c.get('description'))[:200]}")
        results.append(r)
    return results


def run_suite(cli: list[str], env: dict[str, str], url: str, revision: str, outdir: Path, logfile: Path) -> None:
    cmd = [*cli, "server", "--url", url, "--requirements", revision, "-o", str(outdir)]
    with open(logfile, "wb") as out:
        # Its exit status reflects its own scoring; ours is computed from checks.json below.
        subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=900)


# ---- expected failures ------------------------------------------------------------------------


def listed_failures(path: Path) -> list[str]:
    """Every entry of expected-failures.txt (lines that are neither blank nor comments): each
    one fails the run, since the file must stay empty."""
    return [f"{path.name}:{n}: {raw.strip()}" for n, raw in enumerate(path.read_text().splitlines(), 1)
            if raw.strip() and not raw.strip().startswith("#")]


def judged_on_fixture(results: list[ScenarioResult]) -> list[str]:
    """A failure for every check a server target set aside that the fixture did not pass."""
    bad = []
    for r in results:
        if not r.on_fixture:
            continue
        twin = next((f for f in results if f.is_fixture and f.runtime == r.runtime
                     and f.revision == r.revision and f.scenario == r.scenario), None)
        for check in sorted(r.on_fixture):
            if twin is None or check in twin.failing_checks:
                bad.append(f"{r.target} {r.revision} {r.scenario}: check {check} is judged on the "
                           "fixture, which did not pass it in this run")
    return bad


# ---- main -------------------------------------------------------------------------------------


def main() -> int:
    revisions = [r.strip() for r in os.environ.get("CONFORMANCE_REVISIONS", "2025-11-25,2026-07-28").split(",") if r.strip()]
    runtimes = [r.strip() for r in os.environ.get("CONFORMANCE_RUNTIMES", "std,smol").split(",") if r.strip()]
    fixture_bin = binary("BERNSTEIN_CONFORMANCE_FIXTURE_BIN", "bernstein-conformance-fixture")
    server_bin = binary("BERNSTEIN_BIN", "bernstein")
    for b in (fixture_bin, server_bin):
        if not b.is_file():
            log(f"missing {b}: build the workspace first (cargo build --workspace)")
            log("conformance: 0 passed, 1 failed, 0 skipped")
            return 1
    listed = listed_failures(EXPECTED)
    cli, env = ensure_suite()
    logs = CACHE / "test-logs" / "conformance"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    results: list[ScenarioResult] = []
    scratch = Path(tempfile.mkdtemp(prefix="bernstein-conformance-"))
    targets = [(f"fixture-{rt}", [str(fixture_bin), "--runtime", rt], None) for rt in runtimes]
    for rt in runtimes:
        targets.append((f"server-{rt}", [str(server_bin), "mcp", "--transport", "http", "--runtime", rt], SURFACE))
    try:
        for label, argv, only in targets:
            workdir = scratch / label
            workdir.mkdir()
            running = start(label, [*argv, "--workdir", str(workdir), "--host", "127.0.0.1", "--port", "0"], workdir, logs)
            try:
                for rev in revisions:
                    outdir = logs / f"{label}-{rev}"
                    t0 = time.monotonic()
                    run_suite(cli, env, running.url, rev, outdir, logs / f"{label}-{rev}.log")
                    got = read_results(outdir, label, rev, only)
                    log(f"{label} {rev}: {len(got)} scenarios in {time.monotonic() - t0:.1f}s")
                    results.extend(got)
            finally:
                running.stop()
            if "panicked at" in running.stderr_path.read_text(errors="replace"):
                log(f"{label}: the server panicked; see {running.stderr_path}")
                results.append(ScenarioResult(label, "-", "no-panic", {"panic"}, {"panic": "server panicked"}))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    failures = [f"{r.target} {r.revision} {r.scenario}: check {c}: {r.messages.get(c, '')}"
                for r in results for c in sorted(r.failing_checks)]
    failures.extend(judged_on_fixture(results))
    passed = sum(1 for r in results if not r.failing_checks)
    failed = len(results) - passed
    for r in results:
        verdict = "FAIL" if r.failing_checks else "ok"
        detail = f"  ({len(r.failing_checks)} failing checks)" if r.failing_checks else ""
        log(f"  {verdict:5} {r.target:12} {r.revision} {r.scenario}{detail}")
        if r.on_fixture:
            log(f"         judged on the fixture: {', '.join(sorted(r.on_fixture))}")
        for w in r.warnings:
            log(f"         warning: {w}")
    if failures:
        log("\nFAILURES:")
        for u in failures:
            log(f"  {u}")
    if listed:
        log("\nexpected-failures.txt must stay empty (fix the failure instead of listing it):")
        for e in listed:
            log(f"  {e}")
        failed += len(listed)
    log(f"\nlogs: {logs}")
    log(f"conformance: {passed} passed, {failed} failed, 0 skipped")
    return 1 if failures or listed else 0


if __name__ == "__main__":
    sys.exit(main())
