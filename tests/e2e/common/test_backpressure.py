"""Clients that hold the server's resources without using them, against the real binary on
both runtimes (docs/OPERATIONS.md, "Slow and greedy clients"):

* A client that pipelines thousands of requests on one connection and never reads an answer
  holds the bound on unsent output (BERNSTEIN_MCP_MAX_UNSENT_BYTES) plus one answer, not one
  answer per request: the server stops reading that connection and serving what is framed on
  it, answers everyone else meanwhile, and drops the connection once its writes make no
  progress for BERNSTEIN_MCP_WRITE_TIMEOUT_SECS. (Before: 300 `/api/overview?window=86400` and
  3,000 `/metrics` grew the server by 56 MiB on std and 34 MiB on smol.)
* One peer opening 140 dashboard feeds, or 140 legacy SSE streams, holds its share only
  (BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER, a quarter of BERNSTEIN_MCP_SSE_MAX_STREAMS); at a
  cap the one idle longest is closed for the newcomer, so another operator, even on the same
  loopback address, still gets a feed. A cap with nothing idle to close answers 503 naming it.
* A feed that hears no new head for BERNSTEIN_MCP_FEED_IDLE_SECS is closed.

Every client here is 127.0.0.1 (so the per-peer cap alone would protect nobody: the
eviction of the idle longest is what keeps the second client served).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

from harness.http_raw import call_tool, request, status_of
from harness.operator import Feed
from harness.payloads import ok_payload

MIB = 1 << 20
EVICTED = b": closed for a newer stream (the cap is reached)\n\n"


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def gauge(base: str, name: str) -> float:
    scrape = request(base, "GET", "/metrics").body.decode()
    return next(float(line.split()[1]) for line in scrape.splitlines() if line.startswith(name + " "))


def wait_for(predicate, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling the server's state, not synchronising on time
    return True


def read_to_eof(s: socket.socket, got: bytes = b"") -> bytes:
    s.settimeout(30)
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk


def authority(srv) -> str:
    return f"127.0.0.1:{srv.port}"


def open_sse(srv) -> tuple[socket.socket, bytes]:
    """Opens `GET /sse`; the socket and what arrived up to the end of the head."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(f"GET /sse HTTP/1.1\r\nHost: {authority(srv)}\r\nAccept: text/event-stream\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    return s, got


def endpoint_of(s: socket.socket, got: bytes) -> str:
    while b"event: endpoint\ndata: " not in got or not got.endswith(b"\n\n"):
        got += s.recv(4096)
    return got.split(b"event: endpoint\ndata: ", 1)[1].split(b"\n", 1)[0].decode()


def post_message(srv, endpoint: str, message: dict) -> socket.socket:
    """POSTs `message` for a legacy stream on a fresh connection, without reading the answer."""
    body = json.dumps(message).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(f"POST {endpoint} HTTP/1.1\r\nHost: {authority(srv)}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return s


def test_a_client_that_never_reads_holds_little_and_others_are_served(http_server):
    srv = http_server("never-reads", env={"BERNSTEIN_MCP_WRITE_TIMEOUT_SECS": "1"}, record=False)
    base, pid = srv.direct_base, srv.proc.pid
    # Every route the attack uses has been served once (their first use allocates for good).
    for _ in range(3):
        assert request(base, "GET", "/metrics").status == 200
        assert request(base, "GET", "/api/overview?window=86400").status == 200
    # Peak RSS from here on.
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = status_kib(pid, "VmRSS")
    host = f"Host: {authority(srv)}\r\n"
    pipelined = (f"GET /api/overview?window=86400 HTTP/1.1\r\n{host}\r\n" * 300
                 + f"GET /metrics HTTP/1.1\r\n{host}\r\n" * 3000).encode()
    attacker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    attacker.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel holds little for it
    attacker.connect(("127.0.0.1", srv.port))

    def send() -> None:
        try:
            attacker.sendall(pipelined)
        except OSError:
            pass  # dropped by the server: what it had not read is refused

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    # Others are answered meanwhile (the socket timeout fails the test if not).
    for _ in range(3):
        assert request(base, "GET", "/healthz", timeout=5).status == 200
        reply = call_tool(base, "bernstein_status", {})
        assert "result" in reply.rpc_response(), reply.body[:300]
    # Its writes stall: it is dropped after the write timeout (only the scrape is left open).
    assert wait_for(lambda: gauge(base, "bernstein_http_connections_open") == 1, 30), \
        gauge(base, "bernstein_http_connections_open")
    grew = status_kib(pid, "VmHWM") - before
    assert grew < 20 * MIB, f"the server grew by {grew / MIB:.1f} MiB for a client that never reads"
    attacker.close()
    sender.join(timeout=10)
    assert request(base, "GET", "/healthz", timeout=5).status == 200


def test_a_flood_of_feeds_from_one_peer_leaves_a_feed_for_another_operator(http_server):
    # A cap of 8 feeds in all, so 2 for one peer address.
    srv = http_server("feed-flood", env={"BERNSTEIN_MCP_SSE_MAX_STREAMS": "8"}, record=False)
    base = srv.direct_base
    flood = [Feed(base) for _ in range(140)]
    assert all(f.status == 200 for f in flood)
    other = Feed(base)
    try:
        assert other.status == 200
        assert other.next_head()["records"] == 0
        # The flood holds no more than its peer's share: its older feeds were closed, saying why.
        first = flood[0]
        assert read_to_eof(first.sock, first.buf).endswith(EVICTED)
        assert gauge(base, "bernstein_http_connections_open") == 3  # two feeds and the scrape
        log = srv.stderr_text()
        assert "closed the dashboard feed of 127.0.0.1:" in log, log[-2000:]
        assert "the cap of 2 dashboard feeds per peer address (BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER)" in log
        # The operator's feed works: it hears the next head.
        call_tool(base, "bernstein_run", {"goal": "seen by the second operator"})
        assert other.next_head()["records"] > 0
    finally:
        other.close()
        for f in flood:
            f.close()


def test_a_feed_that_hears_no_new_head_is_closed(http_server):
    srv = http_server("feed-idle", env={"BERNSTEIN_MCP_FEED_IDLE_SECS": "1"}, record=False)
    feed = Feed(srv.direct_base)
    try:
        feed.next_head()
        assert read_to_eof(feed.sock, feed.buf).endswith(b": idle timeout, closing\n\n")
    finally:
        feed.close()


def test_a_flood_of_legacy_streams_leaves_a_stream_for_another_client(http_server):
    srv = http_server("sse-flood", env={"BERNSTEIN_MCP_SSE_MAX_STREAMS": "8"}, record=False)
    flood = [open_sse(srv) for _ in range(140)]
    assert all(status_of(got) == 200 for _, got in flood)
    mine, got = open_sse(srv)
    try:
        assert status_of(got) == 200, got
        endpoint = endpoint_of(mine, got)
        first, first_got = flood[0]
        assert read_to_eof(first, first_got).endswith(EVICTED)
        assert gauge(srv.direct_base, "bernstein_http_connections_open") == 3
        # The stream serves: a message POSTed for it is answered on it.
        poster = post_message(srv, endpoint, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
        answer = b""
        while b'"id":7' not in answer:
            chunk = mine.recv(65536)
            assert chunk, answer
            answer += chunk
        assert status_of(poster.recv(4096)) == 202
        poster.close()
    finally:
        mine.close()
        for s, _ in flood:
            s.close()


def test_a_stream_cap_with_every_stream_serving_refuses_naming_the_cap(http_server):
    srv = http_server("sse-busy", env={"BERNSTEIN_MCP_SSE_MAX_STREAMS": "8"}, record=False)
    run = ok_payload(call_tool(srv.direct_base, "bernstein_run", {"goal": "busy streams"}).rpc_response()["result"])
    held = []
    try:
        # The peer's two streams each serve a long poll.
        for i in range(2):
            s, got = open_sse(srv)
            endpoint = endpoint_of(s, got)
            poll = {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                    "params": {"name": "bernstein_run_status",
                               "arguments": {"run_id": run["run_id"], "wait_ms": 20000}}}
            held += [s, post_message(srv, endpoint, poll)]
        assert wait_for(lambda: gauge(srv.direct_base, "bernstein_waits_in_flight") == 2, 10)
        refused, got = open_sse(srv)
        held.append(refused)
        raw = read_to_eof(refused, got)
        assert status_of(raw) == 503, raw
        body = json.loads(raw.split(b"\r\n\r\n", 1)[1])
        assert body["error"] == "over_capacity"
        assert body["message"] == (
            "the cap of 2 legacy SSE streams per peer address (BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER) "
            "is reached, every one of them serving a message; retry later"), body
    finally:
        for s in held:
            s.close()
