"""Fixtures of the Node-client suite: real TypeScript SDKs and Inspector CLIs against `bernstein mcp`.

* `node_clients` (session): Node 22 and the exact tree of `package-lock.json` installed under
  `.cache/e2e-node` (harness/node.py; nothing is written into the source tree), with the
  driver scripts of `clients/` copied next to their node_modules so ESM imports resolve.
* `stdio_target(label)`: how a Node client starts a recorded stdio server (`tee_each.py` →
  `tee_server.py` → `bernstein mcp`); every process's messages are schema-validated at teardown
  by the root `launcher` fixture.
* `http_server(label, **kw)`: `bernstein mcp --transport http` behind the recording proxy
  (harness/http_server.py), stopped after the test.
* `NodeClients.run(...)` runs one driver against a target and returns its JSON line (`report(...)`: any
  driver, with the variables given); `inspector(...)` runs one
  Inspector CLI invocation and returns (exit code, stdout, stderr).
"""

from __future__ import annotations

import itertools
import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import node
from harness.launch import REPO_ROOT, base_env

HERE = Path(__file__).resolve().parent
INSTALL_DIR = REPO_ROOT / ".cache" / "e2e-node"
TEE_EACH = HERE / "tee_each.py"
CLIENT_TIMEOUT = 90  # a hang guard for one client process, never a timing assertion
INSPECTOR_TIMEOUT = 30  # the same for one Inspector CLI call (a run that is never answered hangs it)
INSPECTORS = {
    "0.21": "inspector-0.21/cli/build/cli.js",
    "2.12": "inspector-2.12/clients/launcher/build/index.js",
}


@dataclass
class NodeClients:
    node: Path
    root: Path
    env: dict[str, str]

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        env = base_env({"PATH": self.env["PATH"]})
        env.update(extra)
        return env

    def run(self, script: str, target: dict, scenario: str, era: str = "legacy",
            env: dict[str, str] | None = None) -> dict:
        """Runs clients/SCRIPT against TARGET (`env`: more variables); returns its JSON report."""
        return self.report(script, {"TARGET": json.dumps(target), "SCENARIO": scenario, "ERA": era, **(env or {})})

    def report(self, script: str, env: dict[str, str]) -> dict:
        """Runs clients/SCRIPT with the variables `env`; returns its last JSON line, with its stderr."""
        r = subprocess.run([str(self.node), str(self.root / "clients" / script)], env=self._env(env),
                           capture_output=True, text=True, timeout=CLIENT_TIMEOUT, stdin=subprocess.DEVNULL,
                           cwd=str(self.root))
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        assert lines, f"{script} printed no report (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        report = json.loads(lines[-1])
        report["stderr"] = r.stderr
        return report

    def inspector(self, version: str, args: list[str], home: Path) -> tuple[int | None, str, str]:
        """One Inspector CLI run (`mcp-inspector --cli ARGS`) with HOME set to a scratch dir."""
        home.mkdir(parents=True, exist_ok=True)
        argv = [str(self.node), str(self.root / "node_modules" / INSPECTORS[version]), "--cli", *args]
        try:
            r = subprocess.run(argv, env=self._env({"HOME": str(home)}), capture_output=True, text=True,
                               timeout=INSPECTOR_TIMEOUT, stdin=subprocess.DEVNULL, cwd=str(home))
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            return None, out, err
        return r.returncode, r.stdout, r.stderr


@pytest.fixture(scope="session")
def node_clients() -> NodeClients:
    try:
        bin_dir, env = node.ensure_node(REPO_ROOT / ".cache")
        node.ensure_locked(HERE, INSTALL_DIR, env)
    except (RuntimeError, OSError) as e:
        pytest.fail(f"could not install the Node clients: {e}", pytrace=False)
    clients = INSTALL_DIR / "clients"
    shutil.rmtree(clients, ignore_errors=True)
    shutil.copytree(HERE / "clients", clients)
    return NodeClients(node=bin_dir / "node", root=INSTALL_DIR, env=env)


@pytest.fixture
def stdio_target(launcher):
    """A factory: `stdio_target(label, **server_kw)` -> a TARGET for the Node drivers."""

    def make(label: str = "node", **kw) -> dict:
        prefix = launcher._prefix(label)
        argv = launcher.server_argv(**kw)
        return {
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(TEE_EACH), str(prefix), *argv],
            "env": base_env(),
            "cwd": str(launcher.workdir),
        }

    return make


@pytest.fixture
def stdio_script(launcher, stdio_target):
    """A factory: `stdio_script(label)` -> an executable that starts a recorded stdio server
    (for the Inspector CLIs, which take a server command line among their own options)."""
    made = itertools.count(1)

    def make(label: str = "inspector") -> str:
        t = stdio_target(label)
        path = launcher.logdir / f"server-{next(made)}.sh"
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in t["env"].items())
        cmd = " ".join(shlex.quote(a) for a in [t["command"], *t["args"]])
        path.write_text(f"#!/bin/sh\ncd {shlex.quote(t['cwd'])} && exec env -i {env} {cmd}\n")
        path.chmod(0o755)
        return str(path)

    return make



@pytest.fixture
def target(request, stdio_target, http_server):
    """TARGET for the test's `transport` parameter (stdio, http = streamable HTTP, sse = legacy)."""
    transport = request.getfixturevalue("transport")
    if transport == "stdio":
        return stdio_target()
    srv = http_server()
    return {"transport": transport, "url": srv.mcp_url if transport == "http" else srv.sse_url}

