"""Fixtures of the worker end-to-end tests (issue 6): a real `bernstein mcp --transport http`
server on the std runtime, the `mcp<2` SDK as the host, and real `bernstein worker` processes
running shell-script agents.

The suite runs on one runtime only (the worker is an HTTP client; the runtimes are covered by
the HTTP suites) to stay well under its time budget. `Worker` starts `bernstein worker --url`,
captures its output to a file and stops it with SIGTERM (or SIGKILL) by pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness import launch
from harness.http_server import HttpServer
from harness.transcript import check_recording, recordings_in

collect_ignore = []
try:
    from importlib.metadata import version

    if int(version("mcp").split(".")[0]) != 1:
        collect_ignore.append("test_worker.py")
except Exception:  # noqa: BLE001 - no SDK: nothing to collect
    collect_ignore.append("test_worker.py")


@pytest.fixture
def server(bernstein_bin: Path, workdir: Path, tmp_path: Path, request):
    """A recorded HTTP server (std runtime, standard tier) on `workdir`."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    request.node._bernstein_logdir = logdir
    lnch = launch.Launcher(binary=bernstein_bin, runtime="std", workdir=workdir, logdir=logdir)
    srv = HttpServer(lnch, "worker-host", tier="standard")
    yield srv
    srv.stop()
    problems: list[str] = []
    for prefix in recordings_in(logdir):
        problems.extend(check_recording(prefix))
    if problems:
        pytest.fail("server messages failed MCP schema validation:\n" + "\n".join(problems[:40]), pytrace=False)


class Worker:
    """One `bernstein worker` process."""

    def __init__(self, url: str, project: Path, out: Path, script: str, *args: str):
        self.out = out
        self.receipts = out.with_suffix(".receipts")
        argv = [
            str(launch.binary_path()), "worker", "--url", url, "--project", str(project),
            "--exec", script, "--poll", "100ms", "--max-poll", "400ms", "--flush", "200ms",
            "--receipts-dir", str(self.receipts), *args,
        ]
        self._log = open(out, "wb")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=launch.base_env(), cwd=str(project),
        )

    def text(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, needle: str, count: int = 1, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.text().count(needle) < count:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited {self.proc.returncode} before {needle!r}:\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {count}x {needle!r} after {timeout}s:\n{self.text()}")
            time.sleep(0.05)  # polling the worker's log, not synchronising on time

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._log.close()
        return rc

    def receipt_files(self) -> list[Path]:
        return sorted(self.receipts.glob("*.json")) if self.receipts.is_dir() else []


@pytest.fixture
def workers(server: HttpServer, workdir: Path, tmp_path: Path):
    """A factory: `workers(script, *extra_args)` -> a running `Worker` on the server."""
    started: list[Worker] = []

    def start(script: str, *args: str) -> Worker:
        w = Worker(server.direct_base + "/mcp", workdir, tmp_path / f"worker{len(started) + 1}.log", script, *args)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop(signal.SIGKILL)
    # Agents live in their own process groups; a test that killed its worker leaves one.
    for pidfile in workdir.glob("agent-*.pid"):
        try:
            os.killpg(int(pidfile.read_text().strip()), signal.SIGKILL)
        except (ValueError, ProcessLookupError, PermissionError):
            pass

