"""The MCP Inspector CLI (`mcp-inspector --cli`, npm `@modelcontextprotocol/inspector` 0.21 and
2.12) against `bernstein mcp` over stdio, streamable HTTP and legacy SSE.

0.21 (TS SDK 1.x inside) speaks the handshake era; 2.12 runs `--protocol-era legacy|modern|auto`
(no `modern` over legacy SSE). Every call is one CLI process, so a stdio server is started per
call on the test's workdir (the ledger carries the run from call to call); each HTTP test keeps
one server. 2.12 prints `{"result": ...}` with `--format json`; 0.21 prints the bare result.
"""

from __future__ import annotations

import json

import pytest

import checks
from harness.http_server import RecordingProxy, split_authority
from harness.payloads import outcome, refusal

TRANSPORTS = ["stdio", "http", "sse"]
CASES = [pytest.param("0.21", t, "legacy", id=f"i0.21-{t}") for t in TRANSPORTS] + [
    pytest.param("2.12", t, era, id=f"i2.12-{t}-{era}")
    for t in TRANSPORTS
    for era in ("legacy", "modern", "auto")
    if not (t == "sse" and era == "modern")
]


class Inspector:
    def __init__(self, node_clients, version, transport, era, stdio_script, http_server, launcher, home):
        self.nc, self.version, self.transport, self.era = node_clients, version, transport, era
        self.stdio_script, self.launcher, self.home = stdio_script, launcher, home
        self.srv = http_server() if transport != "stdio" else None
        self.proxy: RecordingProxy | None = None

    def _target(self) -> list[str]:
        if self.srv is None:
            return [self.stdio_script()]
        # One recording per CLI process: each is a new session whose request ids start again.
        host, port = split_authority(self.srv.authority)
        self.proxy = RecordingProxy((host, port), self.launcher._prefix("inspector-call"))
        url = self.proxy.base + ("/mcp" if self.transport == "http" else "/sse")
        if self.version == "0.21":
            return [url, "--transport", self.transport]
        return ["--server-url", url, "--transport", self.transport]

    def call(self, *args: str) -> tuple[int | None, object, str]:
        """(exit code, parsed result or raw stdout, stderr) of `--method ARGS...`."""
        argv = [*self._target(), *args]
        if self.version == "2.12":
            argv = ["--protocol-era", self.era, "--format", "json", *argv]
        try:
            rc, out, err = self.nc.inspector(self.version, argv, self.home)
        finally:
            if self.proxy is not None:
                self.proxy.close()
                self.proxy = None
        assert rc is not None, f"the Inspector {self.version} hung on {args} (no answer within its guard): {err[-800:]}"
        try:
            doc = json.loads(out)
        except ValueError:
            return rc, out, err
        if self.version == "2.12" and isinstance(doc, dict) and "result" in doc:
            doc = doc["result"]
        return rc, doc, err

    def ok(self, *args: str):
        rc, doc, err = self.call(*args)
        assert rc == 0 and isinstance(doc, dict), f"{args}: exit {rc}: {str(doc)[:600]}\n{err[-800:]}"
        return doc, err

    def tool(self, name: str, arguments: dict):
        if self.version == "2.12":
            spec = ["--tool-args-json", json.dumps(arguments)]
        else:
            spec = ["--tool-arg", *(f"{k}={v}" for k, v in arguments.items())] if arguments else []
        return self.call("--method", "tools/call", "--tool-name", name, *spec)


@pytest.fixture
def inspector(request, node_clients, stdio_script, http_server, launcher, tmp_path):
    version, transport, era = request.getfixturevalue("version"), request.getfixturevalue("transport"), request.getfixturevalue("era")
    return Inspector(node_clients, version, transport, era, stdio_script, http_server, launcher,
                     tmp_path / "home")


@pytest.mark.parametrize("version,transport,era", CASES)
def test_tools_list_portable(inspector, version, transport, era):
    """tools/list: no unknown-format warnings; with 2.12 `--strict`, no portability warning."""
    args = ["--method", "tools/list"] + (["--strict"] if inspector.version == "2.12" else [])
    rc, doc, err = inspector.call(*args)
    assert rc == 0, f"exit {rc}: {err[-1500:]}"
    assert checks.CORE_TOOLS <= {t["name"] for t in doc["tools"]}, doc
    checks.no_unknown_formats(err)
    warnings = [ln for ln in err.splitlines() if ln.startswith("Warning:")]
    assert not warnings, f"{len(warnings)} portability warnings from --strict, e.g.:\n" + "\n".join(
        err.split("\n\n")[:2])


@pytest.mark.parametrize("version,transport,era", CASES)
def test_run_status_cancel_loop(inspector, version, transport, era):
    rc, result, err = inspector.tool("bernstein_run", {"goal": "Write the release notes for 0.1"})
    assert rc == 0 and isinstance(result, dict), f"exit {rc}: {str(result)[:600]} {err[-600:]}"
    run = checks.run_handle(result)
    steps = {"run": result}
    for key, name, args in (
        ("status1", "bernstein_run_status", {"run_id": run["run_id"]}),
        ("status2", "bernstein_run_status", {"run_id": run["run_id"]}),
        ("cancel", "bernstein_cancel", {"task_id": run["task_id"]}),
        ("after", "bernstein_run_status", {"run_id": run["run_id"]}),
    ):
        rc, steps[key], err = inspector.tool(name, args)
        assert rc == 0, f"{name}: exit {rc}: {str(steps[key])[:600]} {err[-600:]}"
    checks.loop(steps)


@pytest.mark.parametrize("version,transport,era", CASES)
def test_capability_resource_and_prompt(inspector, version, transport, era):
    card, _ = inspector.ok("--method", "resources/read", "--uri", "bernstein://capability")
    listing, _ = inspector.ok("--method", "prompts/list")
    prompt, _ = inspector.ok("--method", "prompts/get", "--prompt-name", "orchestrate_goal",
                             "--prompt-args", "goal=Migrate the billing service to the new queue")
    tools, _ = inspector.ok("--method", "tools/list")
    resources, _ = inspector.ok("--method", "resources/list")
    checks.surface({
        "tools": [t["name"] for t in tools["tools"]],
        "resources": [r["uri"] for r in resources["resources"]],
        "card": card,
        "prompts": [p["name"] for p in listing["prompts"]],
        "prompt": prompt,
        "missingPrompt": {"ok": inspector.call("--method", "prompts/get", "--prompt-name", "no_such_prompt")[0] == 0},
        "missingResource": {"ok": inspector.call("--method", "resources/read", "--uri", "bernstein://nope")[0] == 0},
    })


@pytest.mark.parametrize("version,transport,era", CASES)
def test_bad_arguments(inspector, version, transport, era):
    """A wrong-typed argument is an isError refusal the CLI shows (2.12 exits 5 on isError)."""
    rc, result, err = inspector.tool("bernstein_run", {"goal": 5} if inspector.version == "2.12" else {"goal": "5", "bogus": "x"})
    assert rc in (0, 5), f"exit {rc}: {str(result)[:600]} {err[-600:]}"
    assert isinstance(result, dict) and result.get("isError") is True, result
    refusal(result)
    rc, status, _ = inspector.tool("bernstein_status", {})
    assert rc == 0
    assert outcome(status).payload["counts"]["total"] == 0, "a refused call changed the ledger"
