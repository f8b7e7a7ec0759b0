"""The database restarts (crash-like, `pg_ctl -m immediate`) while three instances serve a
stream of writes: calls during the outage fail with a clear error (HTTP 5xx or a structured
tool error, never a success), every acknowledged write is in the ledger exactly once, and the
service resumes by itself when the database is back.
"""

from __future__ import annotations

import threading
import time

from harness.http_raw import HANDSHAKE, call_tool

from pg_support import export_and_verify, payload, pg_script


def test_a_database_restart_loses_no_acknowledged_record(pg_servers, pg_url, workdir, bernstein_bin, tmp_path):
    servers = pg_servers(3, record=False, env={"BERNSTEIN_STORE_TIMEOUT_MS": "3000"})
    acked: list[str] = []
    failures: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(n: int) -> None:
        base = servers[n % 3].direct_base
        i = 0
        while not stop.is_set():
            i += 1
            try:
                reply = call_tool(base, "bernstein_run", {"goal": f"w{n} #{i}"}, version=HANDSHAKE, id_=i)
            except OSError as e:
                with lock:
                    failures.append(f"transport: {e}")
                continue
            if reply.status == 200:
                resp = reply.rpc_response()
                if "result" in resp and not resp["result"].get("isError"):
                    with lock:
                        acked.append(payload(reply)["run_id"])
                    continue
            with lock:
                failures.append(f"{reply.status} {reply.body[:200]!r}")
            time.sleep(0.05)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    before = len(acked)
    pg_script("restart", "immediate")
    # Writes succeed again after the restart.
    deadline = time.monotonic() + 60
    resumed_at = len(acked)
    while len(acked) < resumed_at + 20 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert before > 0, "no write was acknowledged before the restart"
    assert len(acked) >= resumed_at + 20, f"service did not resume: {failures[-5:]}"
    # Every acknowledged run is in the ledger exactly once, and the ledger verifies.
    records = export_and_verify(bernstein_bin, workdir, pg_url, tmp_path / "export")
    created = [r["stream"].removeprefix("run:") for r in records if r["kind"] == "run.created"]
    assert len(created) == len(set(created)), "a run was recorded twice"
    missing = set(acked) - set(created)
    assert not missing, f"{len(missing)} acknowledged runs are not in the ledger"
    assert len(acked) == len(set(acked))
    # The outage was seen as errors, never as successes that were not kept.
    # Calls during the outage got an error that says why (a JSON-RPC error naming the ledger, or
    # an HTTP error status), never a result.
    assert all(not f.startswith("200") or "ledger" in f for f in failures), failures[:5]
