"""Clients of the operator's routes for the end-to-end tests: a raw `/api/events` feed and a
`bernstein dashboard` process."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

from .http_raw import request
from .http_server import READY_DASHBOARD, wait_announced
from .launch import base_env


class Feed:
    """A raw `GET /api/events` stream: its head, then its events as they arrive."""

    def __init__(self, base: str, token: str | None = None):
        host, port = base.split("://")[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.sock.sendall(f"GET /api/events HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode())
        self.buf = b""
        head = self._until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])
        self.head = head.decode()

    def _until(self, sep: bytes) -> bytes:
        while sep not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(self.buf)
            self.buf += chunk
        part, self.buf = self.buf.split(sep, 1)
        return part

    def next_head(self) -> dict:
        """The next `head` event's data (comments and `retry:` blocks are skipped)."""
        while True:
            block = self._until(b"\n\n").decode()
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
            if fields.get("event") == "head":
                data = json.loads(fields["data"])
                assert fields["id"] == str(data["records"])
                return data

    def close(self):
        self.sock.close()


def start_dashboard(bin_path: Path, workdir: Path, runtime: str, log: Path,
                    extra: list[str] | None = None) -> tuple[subprocess.Popen, str]:
    """Starts `bernstein dashboard` on a free port; returns it and its base URL once it listens."""
    err = open(log, "wb")
    proc = subprocess.Popen([str(bin_path), "dashboard", "--workdir", str(workdir), "--port", "0",
                             "--runtime", runtime, *(extra or [])], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=err, env=base_env())
    try:
        return proc, "http://" + wait_announced(proc, log, READY_DASHBOARD)
    except BaseException:
        proc.kill()
        raise


def wait_not_ready(base: str, seconds: float = 15.0):
    """The first `/readyz` answer that is not 200 within `seconds` (the scrub's finding)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        reply = request(base, "GET", "/readyz")
        if reply.status != 200:
            return reply
        time.sleep(0.05)  # polling the probe, as a load balancer does
    raise AssertionError(f"the scrub never found the edit within {seconds} s: /readyz stayed 200")
