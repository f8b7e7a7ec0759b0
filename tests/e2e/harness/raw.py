"""A raw JSON-RPC driver over a recorded server's stdio pipes.

For what an SDK will not send: malformed JSON, wrong envelopes, odd ids, oversize lines,
old protocol versions, pipelined requests from several threads. A reader thread turns the
server's stdout into a queue of parsed messages; waits are bounded only as a safety net
against a hung server (they never stand in for synchronisation).

This driver never retries, reorders or repairs anything: what the server says is what the
test sees.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
from dataclasses import dataclass, field

from .launch import Launcher
from .schema import NEWEST_MODERN

# Upper bound on waiting for one message; only ever reached when the server is broken.
SAFETY_TIMEOUT = 60.0

_EOF = object()


class ServerClosed(AssertionError):
    """The server ended its stdout while a message was still expected."""


def modern_meta(version: str = NEWEST_MODERN, **extra) -> dict:
    """The per-request `_meta` of the 2026-07-28 era."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bernstein-e2e-raw", "version": "0"},
    }
    meta.update(extra)
    return meta


@dataclass
class RawServer:
    """One `bernstein mcp` process driven through pipes. Use as a context manager."""

    proc: subprocess.Popen
    label: str
    _inbox: queue.Queue = field(default_factory=queue.Queue)
    # Auto ids start high so that ids chosen by a test never collide with them.
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1_000_001))
    _write_lock: threading.Lock = field(default_factory=threading.Lock)
    # Messages received while waiting for something else, in arrival order.
    stash: list = field(default_factory=list)
    # Every message received, in arrival order.
    received: list = field(default_factory=list)
    raw_lines: list = field(default_factory=list)

    @classmethod
    def start(cls, launcher: Launcher, label: str = "raw", **kw) -> RawServer:
        command, args, env = launcher.recorded(label, **kw)
        proc = subprocess.Popen(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(launcher.workdir),
        )
        srv = cls(proc=proc, label=label)
        threading.Thread(target=srv._read, daemon=True).start()
        return srv

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.raw_lines.append(line)
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):
                msg = {"__not_json__": line.decode("utf-8", "replace")}
            self._inbox.put(msg)
        self._inbox.put(_EOF)

    # -- sending ------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, msg) -> None:
        self.send_bytes(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    def next_id(self) -> int:
        return next(self._ids)

    def notify(self, method: str, params: dict | None = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def send_request(self, method: str, params: dict | None = None, id=None):
        """Sends a request without waiting; returns its id."""
        rid = self.next_id() if id is None else id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return rid

    # -- receiving ----------------------------------------------------------------------

    def recv(self):
        """The next message from the server (raises ServerClosed at EOF)."""
        if self.stash:
            return self.stash.pop(0)
        return self._pull()

    def _pull(self):
        try:
            msg = self._inbox.get(timeout=SAFETY_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"{self.label}: server sent nothing for {SAFETY_TIMEOUT}s") from None
        if msg is _EOF:
            self._inbox.put(_EOF)
            raise ServerClosed(f"{self.label}: server closed stdout (exit {self.proc.poll()})")
        self.received.append(msg)
        return msg

    def wait_for(self, rid) -> dict:
        """The response whose id equals `rid` (same JSON type and value)."""
        want = json.dumps(rid)
        for i, msg in enumerate(self.stash):
            if isinstance(msg, dict) and "id" in msg and json.dumps(msg["id"]) == want and "method" not in msg:
                return self.stash.pop(i)
        while True:
            msg = self._pull()
            if isinstance(msg, dict) and "id" in msg and json.dumps(msg["id"]) == want and "method" not in msg:
                return msg
            self.stash.append(msg)

    def request(self, method: str, params: dict | None = None, id=None) -> dict:
        """Sends a request and returns its response (the whole JSON-RPC message)."""
        return self.wait_for(self.send_request(method, params, id))

    # -- conveniences -------------------------------------------------------------------

    def initialize(self, version: str = "2025-11-25") -> dict:
        resp = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "bernstein-e2e-raw", "version": "0"},
            },
        )
        assert "result" in resp, f"initialize failed: {resp}"
        self.notify("notifications/initialized")
        return resp["result"]

    def call_tool(self, name: str, arguments: dict | None = None, *, modern: bool = False) -> dict:
        """tools/call; returns the JSON-RPC response."""
        params: dict = {"name": name, "arguments": arguments or {}}
        if modern:
            params["_meta"] = modern_meta()
        return self.request("tools/call", params)

    def close(self) -> tuple[int, list]:
        """Closes stdin, drains stdout to EOF, waits for exit; returns (exit code, leftovers)."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        leftovers = list(self.stash)
        self.stash.clear()
        while True:
            try:
                leftovers.append(self._pull())
            except ServerClosed:
                break
        code = self.proc.wait(timeout=SAFETY_TIMEOUT)
        return code, leftovers

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=SAFETY_TIMEOUT)

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            try:
                self.close()
            except Exception:
                self.kill()
                raise
