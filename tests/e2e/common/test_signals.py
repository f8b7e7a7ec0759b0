"""SIGTERM and SIGINT stop a server gracefully, on every runtime and transport. Over HTTP it
stops accepting, answers the long polls it holds as their runs stand (a result, not a dropped
connection), closes, writes its checkpoint and exits 0; over stdio a signal is end of input:
the held poll is answered, the checkpoint written, exit 0. (Before, either signal killed the
process at once: the held poll was lost and a checkpoint being written was left as a temp file.)
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import pytest

from harness.http_raw import call_tool, request
from harness.launch import base_env
from harness.payloads import ok_payload
from harness.raw import RawServer

WAIT_MS = 20000


def waits_in_flight(base: str) -> int:
    scrape = request(base, "GET", "/metrics").body.decode()
    return next(int(float(line.split()[1])) for line in scrape.splitlines()
                if line.startswith("bernstein_waits_in_flight"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_answers_held_polls_then_exits_cleanly(http_server, workdir, bernstein_bin, sig):
    srv = http_server("signal", record=False)
    base = srv.direct_base
    run = ok_payload(call_tool(base, "bernstein_run", {"goal": "stop me gently"}).rpc_response()["result"])
    answer: dict = {}

    def poll() -> None:
        t0 = time.monotonic()
        reply = call_tool(base, "bernstein_run_status", {"run_id": run["run_id"], "wait_ms": WAIT_MS}, id_=2)
        answer["took"] = time.monotonic() - t0
        answer["result"] = reply.rpc_response()["result"]

    held = threading.Thread(target=poll)
    held.start()
    deadline = time.monotonic() + 10
    while waits_in_flight(base) < 1:
        assert time.monotonic() < deadline, "the long poll never waited"
        time.sleep(0.02)  # polling the server's gauge, not synchronising on time
    srv.proc.send_signal(sig)
    held.join(timeout=15)
    assert not held.is_alive(), "the held poll was not answered after the signal"
    assert answer["took"] < WAIT_MS / 1000 / 2, answer
    handle = ok_payload(answer["result"])
    assert handle["runId"] == run["run_id"] and handle["status"] == "working", handle
    assert srv.proc.wait(timeout=15) == 0, srv.stderr_text()[-2000:]
    assert f"bernstein: {sig.name}: stopping" in srv.stderr_text()
    assert_closed_cleanly(workdir, bernstein_bin)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_is_end_of_input_for_a_stdio_server(launcher, workdir, bernstein_bin, sig):
    with RawServer.start(launcher, "stdio-signal") as srv:
        srv.initialize()
        run = ok_payload(srv.call_tool("bernstein_run", {"goal": "stop me gently"})["result"])
        held = srv.send_request(
            "tools/call",
            {"name": "bernstein_run_status", "arguments": {"run_id": run["run_id"], "wait_ms": WAIT_MS}},
        )
        # A waiting stdio line lets the lines behind it through: once this ping is answered,
        # the poll before it is being held.
        assert "result" in srv.request("ping")
        t0 = time.monotonic()
        srv.proc.send_signal(sig)  # to the recording proxy, which passes it on
        answer = srv.wait_for(held)
        assert time.monotonic() - t0 < WAIT_MS / 1000 / 2, answer
        handle = ok_payload(answer["result"])
        assert handle["runId"] == run["run_id"] and handle["status"] == "working", handle
        assert srv.proc.wait(timeout=15) == 0
    stderr = "".join(p.read_text() for p in launcher.logdir.glob("*stdio-signal.stderr.log"))
    assert f"bernstein: {sig.name}: stopping" in stderr, stderr[-2000:]
    assert_closed_cleanly(workdir, bernstein_bin)


def assert_closed_cleanly(workdir, bernstein_bin) -> None:
    """The checkpoint is written, no temp file is left, and the ledger verifies."""
    ledger_dir = workdir / ".sdd" / "ledger"
    assert (ledger_dir / "checkpoint.json").exists()
    assert not [p.name for p in ledger_dir.iterdir() if ".tmp." in p.name]
    done = subprocess.run([str(bernstein_bin), "audit", "verify", "--dir", str(workdir / ".sdd")],
                          env=base_env(), capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("OK:"), done.stdout + done.stderr
