"""Servers and ledger changes for the dashboard tests.

`DashServer` is one `bernstein mcp --transport http` process (or, `read_only=True`, the
read-only `bernstein dashboard`) on a chosen port (`0`: a free one), so that a test can stop
it and start the next process on the same port, as an operator restarting the server would;
the browser talks to it directly. `workdir` serves another project directory than the
launcher's (a tampered copy, say). `tool` makes an MCP tool call
over HTTP and returns its payload; `ready` reads `/readyz` (records and head of the ledger).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.http_raw import HANDSHAKE, call_tool, request
from harness.http_server import (
    READY,
    READY_DASHBOARD,
    record_exit,
    split_authority,
    terminate,
    wait_announced,
)
from harness.launch import Launcher, base_env
from harness.payloads import ok_payload



class DashServer:
    """A server on `port` (0 = any free one) over `launcher`'s workdir."""

    def __init__(self, launcher: Launcher, label: str, *, port: int = 0, env: dict[str, str] | None = None,
                 read_only: bool = False, workdir: Path | None = None):
        self.prefix = launcher._prefix(label)
        workdir = workdir or launcher.workdir
        where = ["--host", "127.0.0.1", "--port", str(port)]
        if read_only:
            argv = [str(launcher.binary), "dashboard", "--workdir", str(workdir),
                    "--runtime", launcher.runtime, *where]
        else:
            argv = launcher.server_argv(workdir=workdir) + ["--transport", "http", *where]
        self._ready = READY_DASHBOARD if read_only else READY
        self.stderr_path = Path(str(self.prefix) + ".stderr.log")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr, env=base_env(env), cwd=str(workdir))
        try:
            self.port = split_authority(wait_announced(self.proc, self.stderr_path, self._ready))[1]
        except BaseException:
            self.stop()
            raise
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> int | None:
        """SIGTERM, then the exit status (killed after 20 s). Idempotent."""
        terminate(self.proc)
        return record_exit(self.proc, self._stderr, self.prefix)


def tool(base: str, name: str, args: dict | None = None, *, token: str | None = None) -> dict:
    """The payload of a successful tool call (fails the test on a refusal)."""
    reply = call_tool(base, name, args or {}, version=HANDSHAKE, token=token)
    assert reply.status == 200, (reply.status, reply.body[:500])
    return ok_payload(reply.rpc_response()["result"])


def ready(base: str, *, token: str | None = None) -> dict:
    """`/readyz`: {"status": "ready", "records": n, "head": "..."}."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reply = request(base, "GET", "/readyz", headers=headers)
    assert reply.status == 200, (reply.status, reply.body[:500])
    return json.loads(reply.body)


def run(base: str, goal: str, *, token: str | None = None, **extra) -> str:
    """Starts a run; its id."""
    return tool(base, "bernstein_run", {"goal": goal, **extra}, token=token)["run_id"]
