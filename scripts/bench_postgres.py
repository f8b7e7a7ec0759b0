#!/usr/bin/env python3
"""Load figures of the PostgreSQL store (issue 8, docs/POSTGRES.md): read and write calls per
second with 1, 2 and 3 `bernstein mcp --transport http --store postgres://...` instances on one
database and 16 clients, and the cost of a claim under contention.

    scripts/postgres.sh start            # prints the cluster's URL
    cargo build --release -p bernstein
    python3 scripts/bench_postgres.py --url postgres://postgres@127.0.0.1:54329/bernstein

Each configuration gets a fresh database (created next to the one in --url, dropped after).
Clients are threads with one keep-alive HTTP connection each, spread round-robin over the
instances; a read is `bernstein_run_status` of an existing run, a write is `bernstein_run`
(one transaction of several records), a claim is `bernstein_claim` racing 16 claimers over the
instances for the same open tasks. Only the Python standard library is needed; psql must be on
PATH. The client runs on the same machine as the servers and the database, so the figures are a
floor, not a capacity plan.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"serving MCP over HTTP at http://(\S+)/mcp")
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def psql(url: str, sql: str) -> None:
    subprocess.run(["psql", url, "-Atqc", sql], check=True, capture_output=True)


class Conn:
    """One keep-alive connection to one instance."""

    def __init__(self, authority: str):
        host, port = authority.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        self.n = 0

    def call(self, tool: str, arguments: dict) -> dict:
        self.n += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}})
        self.conn.request("POST", "/mcp", body=body, headers=HEADERS)
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{resp.status} {data[:200]!r}")
        msg = json.loads(data)
        if "error" in msg or msg["result"].get("isError"):
            raise RuntimeError(str(msg)[:300])
        doc = json.loads(msg["result"]["content"][0]["text"])
        return doc.get("result", doc)


class Cluster:
    """N server instances on a fresh database."""

    def __init__(self, binary: str, admin_url: str, n: int, tag: str, file_store: bool = False):
        self.db = f"bench_{tag}"
        psql(admin_url, f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        psql(admin_url, f"CREATE DATABASE {self.db}")
        self.admin_url = admin_url
        self.url = admin_url.rsplit("/", 1)[0] + "/" + self.db
        self.work = Path(tempfile.mkdtemp(prefix="bernstein-pg-bench-"))
        subprocess.run([binary, "store", "migrate", "--store", self.url], check=True, capture_output=True)
        self.procs = []
        self.authorities = []
        for i in range(n):
            err = open(self.work / f"server-{i}.log", "wb")
            env = {k: v for k, v in os.environ.items() if not k.startswith("BERNSTEIN_")}
            proc = subprocess.Popen(
                [binary, "mcp", "--workdir", str(self.work), "--transport", "http", "--port", "0",
                 *([] if file_store else ["--store", self.url])],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
            )
            self.procs.append(proc)
            self.authorities.append(self._ready(i, proc))

    def _ready(self, i: int, proc) -> str:
        deadline = time.monotonic() + 120
        log = self.work / f"server-{i}.log"
        while time.monotonic() < deadline:
            m = READY.search(log.read_text(errors="replace"))
            if m:
                return m.group(1)
            if proc.poll() is not None:
                raise RuntimeError(log.read_text(errors="replace"))
            time.sleep(0.02)
        raise RuntimeError("server not ready")

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)
        psql(self.admin_url, f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        if os.environ.get("BENCH_SHOW_LOGS"):
            for log in sorted(self.work.glob("server-*.log")):
                print(log.name, log.read_text(errors="replace")[-600:])
        shutil.rmtree(self.work, ignore_errors=True)


def load(cluster: Cluster, clients: int, seconds: float, make) -> tuple[float, list[float], int]:
    """Runs `clients` threads for `seconds`; returns (calls/s, latencies in ms, errors)."""
    lat: list[float] = []
    errors = [0]
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(i: int) -> None:
        conn = Conn(cluster.authorities[i % len(cluster.authorities)])
        mine = []
        start.wait()
        k = 0
        while time.monotonic() < stop_at[0]:
            k += 1
            tool, args = make(i, k)
            t = time.perf_counter()
            try:
                conn.call(tool, args)
            except Exception as e:  # noqa: BLE001 - counted, the figure says how many
                with lock:
                    errors[0] += 1
                    if errors[0] == 1 and os.environ.get("BENCH_SHOW_LOGS"):
                        print("first error:", str(e)[:300], flush=True)
                conn = Conn(cluster.authorities[i % len(cluster.authorities)])
                continue
            mine.append((time.perf_counter() - t) * 1000)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.monotonic() + seconds
    t0 = time.monotonic()
    start.wait()
    for t in threads:
        t.join()
    return len(lat) / (time.monotonic() - t0), lat, errors[0]


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def claims(cluster: Cluster, claimers: int, tasks: int) -> tuple[float, list[float], int]:
    """`tasks` open tasks, `claimers` racing until none is left: (claims/s, latencies, granted)."""
    seed = Conn(cluster.authorities[0])
    for i in range(tasks):
        seed.call("bernstein_run", {"goal": f"claim bench {i}"})
    lat: list[float] = []
    granted = [0]
    lock = threading.Lock()

    def claimer(i: int) -> None:
        conn = Conn(cluster.authorities[i % len(cluster.authorities)])
        while True:
            t = time.perf_counter()
            got = conn.call("bernstein_claim", {"claimer_id": f"bench-{i}"})
            ms = (time.perf_counter() - t) * 1000
            with lock:
                lat.append(ms)
                if got.get("granted"):
                    granted[0] += 1
            if not got.get("granted"):
                return

    t0 = time.monotonic()
    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(claimers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return granted[0] / (time.monotonic() - t0), lat, granted[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="postgres:// URL of an existing database of the cluster")
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "bernstein"))
    ap.add_argument("--instances", default="1,2,3")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--claim-tasks", type=int, default=300)
    ap.add_argument("--file-store", action="store_true",
                    help="baseline: the same load on the .sdd/ file store (instances share one workdir)")
    a = ap.parse_args()
    print(f"| instances | workload | calls/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|")
    for n in [int(x) for x in a.instances.split(",")]:
        cluster = Cluster(a.bin, a.url, n, f"n{n}", a.file_store)
        try:
            run_id = Conn(cluster.authorities[0]).call("bernstein_run", {"goal": "read target"})["run_id"]
            for name, make in (
                ("read (run_status)", lambda i, k: ("bernstein_run_status", {"run_id": run_id})),
                ("write (run)", lambda i, k: ("bernstein_run", {"goal": f"c{i} #{k}"})),
            ):
                rate, lat, err = load(cluster, a.clients, a.seconds, make)
                print(f"| {n} | {name} | {rate:.0f} | {pct(lat, 50):.1f} | {pct(lat, 99):.1f} | {err} |", flush=True)
        finally:
            cluster.close()
    n = max(int(x) for x in a.instances.split(","))
    for claimers in (1, a.clients):
        cluster = Cluster(a.bin, a.url, n, f"claim{claimers}", a.file_store)
        try:
            tasks = a.claim_tasks if claimers > 1 else a.claim_tasks // 3
            rate, lat, granted = claims(cluster, claimers, tasks)
            assert granted == tasks, (granted, tasks)
            print(f"| {n} | claim, {claimers} claimer(s) racing for {tasks} tasks | {rate:.0f} granted/s | "
                  f"{pct(lat, 50):.1f} | {pct(lat, 99):.1f} | 0 |", flush=True)
        finally:
            cluster.close()


if __name__ == "__main__":
    main()
