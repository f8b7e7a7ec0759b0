"""Servers and ledger changes for the dashboard tests.

`DashServer` is one `bernstein mcp --transport http` process (or, `read_only=True`, the
read-only `bernstein dashboard`) on a chosen port (`0`: a free one), so that a test can stop
it and start the next process on the same port, as an operator restarting the server would;
the browser talks to it directly. `tool` makes an MCP tool call
over HTTP and returns its payload; `ready` reads `/readyz` (records and head of the ledger).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

from harness.http_raw import HANDSHAKE, call_tool, request
from harness.http_server import READY, READY_TIMEOUT, ServerStartError, split_authority
from harness.launch import Launcher, base_env
from harness.payloads import ok_payload

_POLL = 0.02
READY_READ_ONLY = re.compile(r"serving the read-only dashboard at http://(\S+)/")


class DashServer:
    """A server on `port` (0 = any free one) over `launcher`'s workdir."""

    def __init__(self, launcher: Launcher, label: str, *, port: int = 0, env: dict[str, str] | None = None,
                 read_only: bool = False):
        self.prefix = launcher._prefix(label)
        where = ["--host", "127.0.0.1", "--port", str(port)]
        if read_only:
            argv = [str(launcher.binary), "dashboard", "--workdir", str(launcher.workdir),
                    "--runtime", launcher.runtime, *where]
        else:
            argv = launcher.server_argv() + ["--transport", "http", *where]
        self._ready = READY_READ_ONLY if read_only else READY
        self.stderr_path = Path(str(self.prefix) + ".stderr.log")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr, env=base_env(env), cwd=str(launcher.workdir))
        try:
            self.port = split_authority(self._wait_ready())[1]
        except BaseException:
            self.stop()
            raise
        self.base = f"http://127.0.0.1:{self.port}"

    def _wait_ready(self) -> str:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            text = self.stderr_path.read_text(encoding="utf-8", errors="replace")
            m = self._ready.search(text)
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                raise ServerStartError(f"server exited with {self.proc.returncode}: {text[-2000:]}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"server not ready after {READY_TIMEOUT}s: {text[-2000:]}")
            time.sleep(_POLL)  # polling a file for readiness, not synchronising on time

    def stop(self) -> int | None:
        """SIGTERM, then the exit status (killed after 20 s). Idempotent."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._stderr.closed:
            self._stderr.close()
            Path(str(self.prefix) + ".exit").write_text(str(self.proc.returncode), encoding="ascii")
        return self.proc.returncode


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
