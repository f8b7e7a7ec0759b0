"""`bernstein worker --url https://…` against an HTTPS server with a test CA, on both runtimes:

* trusting the CA with `--ca FILE`, and with SSL_CERT_FILE, the worker claims and completes
  the task `bernstein run --url https://…` started;
* trusting neither, it refuses the server with a clear error (the certificate, and what to
  name) and claims nothing: the task is still offered to the next worker, which completes it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness import launch
from harness.http_server import terminate
from harness.tls import HttpsServer, make_certs

AGENT = str(Path(__file__).resolve().parents[3] / "examples" / "agent.sh")


class TlsWorker:
    def __init__(self, url: str, project: Path, out: Path, env: dict[str, str], *args: str):
        self.out = out
        self._log = open(out, "wb")
        self.proc = subprocess.Popen(
            [str(launch.binary_path()), "worker", "--url", url, "--project", str(project), "--exec", AGENT,
             "--claim-wait", "1s", "--poll", "100ms", "--max-poll", "400ms", *args],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=launch.base_env(env),
            cwd=str(project))

    def text(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, needle: str, count: int = 1, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.text().count(needle) < count:
            assert self.proc.poll() is None, f"worker exited {self.proc.returncode}:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {count}x {needle!r}:\n{self.text()}"
            time.sleep(0.05)  # polling the worker's log, not synchronising on time

    def stop(self) -> None:
        terminate(self.proc)
        self._log.close()


def start_run(url: str, ca: Path, goal: str) -> None:
    r = launch.run_cli(["run", "--url", url, goal], env={"SSL_CERT_FILE": str(ca)})
    assert r.returncode == 0, r.stderr


def test_the_worker_verifies_the_server_certificate(launcher, workdir: Path, tmp_path: Path):
    certs = make_certs(tmp_path, "w")
    srv = HttpsServer(launcher, "https-worker", certs.cert, certs.key)
    url = srv.mcp_url
    try:
        start_run(url, certs.ca, "over https with --ca")
        w = TlsWorker(url, workdir, tmp_path / "ca.log", {}, "--ca", str(certs.ca))
        try:
            w.wait_for("completed: done with")
        finally:
            w.stop()

        start_run(url, certs.ca, "over https with SSL_CERT_FILE")
        w = TlsWorker(url, workdir, tmp_path / "env.log", {"SSL_CERT_FILE": str(certs.ca)})
        try:
            w.wait_for("completed: done with")
        finally:
            w.stop()

        start_run(url, certs.ca, "refused, then done")
        other = make_certs(tmp_path, "other")
        w = TlsWorker(url, workdir, tmp_path / "untrusted.log", {"SSL_CERT_FILE": str(other.ca)})
        try:
            w.wait_for("claim failed", count=2)
        finally:
            w.stop()
        text = w.text()
        assert "certificate" in text and "--ca FILE or SSL_CERT_FILE" in text, text
        assert "claimed (" not in text, text
        # Nothing was claimed: the next worker that trusts the server gets the task.
        w = TlsWorker(url, workdir, tmp_path / "after.log", {}, "--ca", str(certs.ca))
        try:
            w.wait_for("claimed (refused, then done)")
            w.wait_for("completed: done with")
        finally:
            w.stop()
    finally:
        srv.stop()
