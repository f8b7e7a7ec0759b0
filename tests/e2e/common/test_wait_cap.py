"""Waiting answers never hold every worker: at most half of the HTTP server's worker threads
hold a long poll's wait (8 of the default 16). A crowd of long polls beyond that is answered at
once with the run as it stands, and an unrelated request is answered at once meanwhile. (Before
the cap, 16 long polls of 20 s made a `tools/list` wait 19 s on both runtimes.)
"""

from __future__ import annotations

import threading
import time

from harness.http_raw import call_tool, request, rpc
from harness.payloads import ok_payload

POLLS = 12
CAP = 8
WAIT_MS = 8000


def test_long_polls_beyond_the_cap_answer_at_once_and_others_are_not_starved(http_server):
    srv = http_server("waitcap")
    run = ok_payload(call_tool(srv.base, "bernstein_run", {"goal": "wait cap"}).rpc_response()["result"])
    answers: list[tuple[float, dict]] = []
    lock = threading.Lock()

    def poll(i: int) -> None:
        t0 = time.monotonic()
        reply = call_tool(srv.base, "bernstein_run_status", {"run_id": run["run_id"], "wait_ms": WAIT_MS}, id_=10 + i)
        payload = ok_payload(reply.rpc_response()["result"])
        with lock:
            answers.append((time.monotonic() - t0, payload))

    threads = [threading.Thread(target=poll, args=(i,)) for i in range(POLLS)]
    for t in threads:
        t.start()
    # The polls beyond the cap come back at once (the run is still working); the others wait.
    deadline = time.monotonic() + WAIT_MS / 1000 / 2
    while True:
        with lock:
            early = len(answers)
        if early >= POLLS - CAP or time.monotonic() > deadline:
            break
        time.sleep(0.02)  # polling the threads' progress, not synchronising on time
    assert early == POLLS - CAP, f"{early} long polls answered early, expected {POLLS - CAP}"
    # With every wait slot taken, other requests are still served by the free workers.
    t0 = time.monotonic()
    listed = rpc(srv.base, "tools/list", id_=99).rpc_response()
    took = time.monotonic() - t0
    assert "tools" in listed["result"], listed
    assert took < WAIT_MS / 1000 / 2, f"tools/list took {took:.1f} s while long polls waited"
    for t in threads:
        t.join()
    assert len(answers) == POLLS
    assert all(p["status"] == "working" for _, p in answers), answers
    waited = sorted(t for t, _ in answers)[POLLS - CAP:]
    assert min(waited) >= WAIT_MS / 1000 * 0.9, waited
    # The operator sees how many answers were sent early for want of a slot.
    scrape = request(srv.base, "GET", "/metrics").body.decode()
    refused = [line for line in scrape.splitlines() if line.startswith("bernstein_waits_refused_total")]
    assert refused == [f"bernstein_waits_refused_total {POLLS - CAP}"], refused
