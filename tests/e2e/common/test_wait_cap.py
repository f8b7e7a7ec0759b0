"""Waiting answers hold no thread: a long poll (or an open `tasks/result`) waits in the server's
waiting room, so a crowd of them costs connections and memory, never the 16 HTTP workers, and
unrelated requests are answered at once meanwhile. Beyond the caps on waits (in all:
`BERNSTEIN_MCP_MAX_WAITS`; for one peer address: `BERNSTEIN_MCP_MAX_WAITS_PER_PEER`) a wait is
refused with a clear, retryable error. (Before the waiting room, 16 long polls of 20 s made a
`tools/list` wait 19 s on both runtimes; then a cap of 8 waits answered the rest early with the
run as it stood.)
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from harness.http_raw import call_tool, request, rpc
from harness.payloads import ok_payload
from harness.raw import RawServer

WORKERS = 16
WAIT_MS = 6000


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError(f"no thread count for {pid}")


def start_polls(base: str, run_id: str, n: int) -> tuple[list[threading.Thread], list[tuple[float, dict]]]:
    answers: list[tuple[float, dict]] = []
    lock = threading.Lock()

    def poll(i: int) -> None:
        t0 = time.monotonic()
        reply = call_tool(base, "bernstein_run_status", {"run_id": run_id, "wait_ms": WAIT_MS}, id_=10 + i)
        result = reply.rpc_response()["result"]
        with lock:
            answers.append((time.monotonic() - t0, result))

    threads = [threading.Thread(target=poll, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, answers


def refusal(result: dict) -> dict:
    assert result["isError"] is True, result
    return json.loads(result["content"][0]["text"])["result"]


def wait_for(predicate, limit: float) -> None:
    deadline = time.monotonic() + limit
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)  # polling the clients' progress, not synchronising on time


def test_a_crowd_of_long_polls_holds_no_worker_and_others_are_answered(http_server):
    polls = 4 * WORKERS
    srv = http_server("waitroom")
    run = ok_payload(call_tool(srv.base, "bernstein_run", {"goal": "waiting room"}).rpc_response()["result"])
    threads, answers = start_polls(srv.base, run["run_id"], polls)
    # Every poll is waiting once the server holds as many waits as there are polls.
    def waiting() -> int:
        scrape = request(srv.base, "GET", "/metrics").body.decode()
        return next(int(float(line.split()[1])) for line in scrape.splitlines()
                    if line.startswith("bernstein_waits_in_flight"))
    wait_for(lambda: waiting() >= polls, WAIT_MS / 1000 / 2)
    assert waiting() == polls, f"{waiting()} of {polls} long polls are waiting"
    # Four times as many waits as workers, yet no thread was added for them...
    assert threads_of(srv.proc.pid) < polls, threads_of(srv.proc.pid)
    # ...and the workers are free: other requests are answered meanwhile.
    for i in range(5):
        t0 = time.monotonic()
        listed = rpc(srv.base, "tools/list", id_=99 + i).rpc_response()
        took = time.monotonic() - t0
        assert "tools" in listed["result"], listed
        assert took < WAIT_MS / 1000 / 4, f"tools/list took {took:.2f} s while long polls waited"
    for t in threads:
        t.join()
    assert len(answers) == polls
    assert all(not r.get("isError") for _, r in answers), answers[:3]
    assert all(ok_payload(r)["status"] == "working" for _, r in answers), answers[:3]
    assert min(t for t, _ in answers) >= WAIT_MS / 1000 * 0.9, sorted(t for t, _ in answers)[:3]


def test_waits_beyond_a_peers_cap_are_refused_with_a_clear_error(http_server):
    cap, polls = 4, 6
    srv = http_server("waitcap", env={"BERNSTEIN_MCP_MAX_WAITS_PER_PEER": str(cap)})
    run = ok_payload(call_tool(srv.base, "bernstein_run", {"goal": "wait cap"}).rpc_response()["result"])
    threads, answers = start_polls(srv.base, run["run_id"], polls)
    wait_for(lambda: len(answers) >= polls - cap, WAIT_MS / 1000 / 2)
    early = list(answers)
    assert len(early) == polls - cap, f"{len(early)} long polls answered early, expected {polls - cap}"
    for _, result in early:
        why = refusal(result)
        assert why["error"] == "too_many_waits", why
        assert "BERNSTEIN_MCP_MAX_WAITS_PER_PEER" in why["hint"], why
    for t in threads:
        t.join()
    waited = [r for t, r in answers if t >= WAIT_MS / 1000 * 0.9]
    assert len(waited) == cap and all(ok_payload(r)["status"] == "working" for r in waited), answers
    # The operator sees how many waits were refused.
    scrape = request(srv.base, "GET", "/metrics").body.decode()
    refused = [line for line in scrape.splitlines() if line.startswith("bernstein_waits_refused_total")]
    assert refused == [f"bernstein_waits_refused_total {polls - cap}"], refused


def test_the_total_cap_on_waits_refuses_too(http_server):
    cap, polls = 2, 3
    srv = http_server("waittotal", env={"BERNSTEIN_MCP_MAX_WAITS": str(cap),
                                        "BERNSTEIN_MCP_MAX_WAITS_PER_PEER": "100"})
    run = ok_payload(call_tool(srv.base, "bernstein_run", {"goal": "total cap"}).rpc_response()["result"])
    threads, answers = start_polls(srv.base, run["run_id"], polls)
    wait_for(lambda: len(answers) >= polls - cap, WAIT_MS / 1000 / 2)
    assert len(answers) == polls - cap, answers
    assert refusal(answers[0][1])["error"] == "too_many_waits"
    for t in threads:
        t.join()
    assert sum(1 for _, r in answers if not r.get("isError")) == cap, answers


def test_stdio_waits_beyond_its_cap_are_refused_too(launcher):
    """On stdio each waiting answer has a thread (or task) of its own: at most 64 at once."""
    cap, polls = 64, 70
    with RawServer.start(launcher, "stdio-waits") as srv:
        srv.initialize()
        run = ok_payload(srv.call_tool("bernstein_run", {"goal": "stdio cap"})["result"])
        ids = [srv.send_request("tools/call", {"name": "bernstein_run_status",
                                               "arguments": {"run_id": run["run_id"], "wait_ms": 3000}})
               for _ in range(polls)]
        answers = [srv.wait_for(i) for i in ids]
    refused = [a for a in answers if a["result"].get("isError")]
    assert len(refused) == polls - cap, [a["result"] for a in refused]
    assert all(refusal(a["result"])["error"] == "too_many_waits" for a in refused)
    assert all(ok_payload(a["result"])["status"] == "working" for a in answers if a not in refused)
