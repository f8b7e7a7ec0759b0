"""Several `bernstein mcp` processes writing one `.sdd/` at the same time.

Two servers on one workdir, each driven from its own thread with pipelined `bernstein_run`
calls (no waiting between requests): afterwards every one of the 2N tasks exists, ids are
unique, each is pollable from either process, and the chain verifies (the workdir fixture
runs `audit verify` at teardown; this test also runs it explicitly).
"""

from __future__ import annotations

import threading

import pytest

from harness import ledger
from harness.payloads import ok_payload
from harness.raw import RawServer

RUNS_PER_SERVER = 25


def drive(srv: RawServer, name: str, barrier: threading.Barrier, out: dict, errors: list) -> None:
    try:
        barrier.wait()
        ids = [
            srv.send_request("tools/call", {"name": "bernstein_run", "arguments": {"goal": f"{name} goal {i}"}})
            for i in range(RUNS_PER_SERVER)
        ]
        out[name] = [ok_payload(srv.wait_for(i)["result"]) for i in ids]
    except BaseException as e:  # reported by the main thread
        errors.append(f"{name}: {e!r}")


@pytest.mark.parametrize("mix", ["same-runtime", "both-runtimes"])
def test_two_processes_one_ledger(launcher, workdir, runtime, mix):
    other_runtime = runtime if mix == "same-runtime" else ("smol" if runtime == "std" else "std")
    servers = {
        "alpha": RawServer.start(launcher, "alpha"),
        "beta": RawServer.start(launcher, "beta", runtime=other_runtime),
    }
    try:
        for srv in servers.values():
            srv.initialize()
        barrier = threading.Barrier(len(servers))
        results: dict = {}
        errors: list = []
        threads = [
            threading.Thread(target=drive, args=(srv, name, barrier, results, errors)) for name, srv in servers.items()
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        assert not any(t.is_alive() for t in threads), "a driver thread hung"
        assert not errors, errors

        created = [task for name in servers for task in results[name]]
        task_ids = [t["task_id"] for t in created]
        run_ids = [t["run_id"] for t in created]
        assert len(set(task_ids)) == 2 * RUNS_PER_SERVER, "task ids collided across processes"
        assert len(set(run_ids)) == 2 * RUNS_PER_SERVER, "run ids collided across processes"

        # Both processes see everything, whoever wrote it.
        for srv in servers.values():
            status = ok_payload(srv.call_tool("bernstein_status")["result"])
            assert status["counts"]["total"] == 2 * RUNS_PER_SERVER, status
        for i, task in enumerate(created):
            srv = servers["beta" if i % 2 == 0 else "alpha"]
            handle = ok_payload(srv.call_tool("bernstein_run_status", {"run_id": task["run_id"]})["result"])
            assert handle["taskId"] == task["task_id"]
            assert handle["status"] == "working"
        for srv in servers.values():
            code, _ = srv.close()
            assert code == 0
    finally:
        for srv in servers.values():
            srv.kill()

    # A third, fresh process agrees.
    with RawServer.start(launcher, "gamma") as srv:
        srv.initialize()
        status = ok_payload(srv.call_tool("bernstein_status")["result"])
        assert status["counts"]["total"] == 2 * RUNS_PER_SERVER
    ledger.assert_verifies(workdir / ".sdd")
    seqs = [ll.seq for ll in ledger.ledger_lines(workdir / ".sdd")]
    assert seqs == list(range(1, len(seqs) + 1)), "the ledger must be one gapless sequence"
