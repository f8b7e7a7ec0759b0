"""An HTTP server whose ledger takes long to open binds its port anyway (after a second) and
answers meanwhile: `/healthz` 200, everything that needs the ledger 503 with `Retry-After` and
a reason, never a refused connection and never an answer from a ledger not yet verified. The
open is held up here the way another process can hold it up: by holding the ledger's lock
(what a long `bernstein ledger upgrade` does); a million-record ledger being verified looks the
same from outside (BENCHMARKS.md).
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import time

from harness.http_raw import call_tool, request
from harness.launch import base_env
from harness.payloads import ok_payload


def test_a_slow_open_binds_early_and_refuses_until_the_ledger_is_ready(http_server, workdir, bernstein_bin):
    done = subprocess.run([str(bernstein_bin), "init", str(workdir)], env=base_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lock = open(workdir / ".sdd" / "ledger" / "lock", "rb")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        t0 = time.monotonic()
        srv = http_server("early")
        bound = time.monotonic() - t0
        assert bound < 30, bound
        base = srv.direct_base
        assert request(base, "GET", "/healthz").json() == {"status": "ok"}
        ready = request(base, "GET", "/readyz")
        assert ready.status == 503, ready.body
        assert ready.headers.get("retry-after"), ready.headers
        assert "still being opened" in ready.json()["reason"], ready.body
        refused = call_tool(base, "bernstein_status", id_=1)
        assert refused.status == 503, refused.body
        assert refused.headers.get("retry-after") == "1", refused.headers
        error = refused.rpc_response()["error"]
        assert error["data"] == {"reason": "ledger_unavailable", "retryable": True}, error
        assert ready.json()["retryable"] is True, ready.body
        assert "still being opened" in error["message"], error
        assert "still being opened" in srv.stderr_text()
        # Nothing was recorded while the lock was held.
        assert (workdir / ".sdd" / "ledger" / "ledger.jsonl").read_bytes() == b""
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    deadline = time.monotonic() + 60
    while request(base, "GET", "/readyz").status != 200:
        assert time.monotonic() < deadline, "the server did not become ready once the lock was released"
        time.sleep(0.05)  # polling readiness, not synchronising on time
    status = ok_payload(call_tool(srv.base, "bernstein_status", id_=2).rpc_response()["result"])
    assert status["counts"]["total"] == 0, json.dumps(status)


def test_a_quick_open_binds_once_ready(http_server):
    srv = http_server("quick")
    # Opened within the wait: served directly, ready from the first request, and nothing said
    # about an early bind.
    assert request(srv.direct_base, "GET", "/readyz").status == 200
    assert "still being opened" not in srv.stderr_text()
