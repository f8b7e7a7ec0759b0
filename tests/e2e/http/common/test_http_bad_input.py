"""Bad input over HTTP (raw sockets, both runtimes): truncated bodies, wrong content types,
oversize bodies, invalid UTF-8, a JSON array body, and clients that open many connections and
send nothing (slowloris). The server answers each with a 4xx (never a 5xx, a panic or a hang),
keeps serving a real client meanwhile, and closes idle connections after its read timeout.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from harness.http_raw import call_tool, request, rpc_body, rpc_headers, send_raw, status_of

# The server's read timeout is 30 s; idle sockets must be closed well within this.
IDLE_CLOSE_WITHIN = 60.0


def still_serving(srv) -> None:
    reply = call_tool(srv.direct_base, "bernstein_status")
    assert reply.status == 200 and "result" in reply.rpc_response(), reply
    assert srv.proc.poll() is None, "the server exited"


def post(srv, body: bytes, headers: dict[str, str]):
    return request(srv.direct_base, "POST", "/mcp", body, headers)


def good_headers(**over) -> dict[str, str]:
    h = rpc_headers(rpc_body("tools/list"))
    h.update(over)
    return h


def test_truncated_bodies(http_server):
    srv = http_server("truncated", record=False)
    body = json.dumps(rpc_body("tools/list")).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body) + 50}\r\n\r\n").encode()
    reply = send_raw(srv.direct_base, head + body, shutdown_write=True)
    assert status_of(reply) in (0, 400, 408), reply[:300]  # closed, or refused
    # A body cut inside the JSON, with an honest Content-Length.
    cut = body[: len(body) // 2]
    r = post(srv, cut, good_headers())
    assert 400 <= r.status < 500 or (r.status == 200 and "error" in r.rpc_response()), r
    # Headers cut before their end.
    reply = send_raw(srv.direct_base, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le", shutdown_write=True)
    assert status_of(reply) in (0, 400, 408), reply[:300]
    still_serving(srv)


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None])
def test_wrong_content_types(http_server, ctype):
    srv = http_server("content-type", record=False)
    h = good_headers()
    del h["Content-Type"]
    if ctype is not None:
        h["Content-Type"] = ctype
    r = post(srv, json.dumps(rpc_body("tools/list")).encode(), h)
    assert r.status in (400, 415), (r.status, r.body[:300])
    still_serving(srv)


def test_oversize_body(http_server):
    srv = http_server("oversize", record=False)
    big = json.dumps(rpc_body("tools/call", {"name": "bernstein_run", "arguments": {"goal": "x" * (2 << 20)}})).encode()
    try:
        r = post(srv, big, good_headers())
        assert r.status == 413, (r.status, r.body[:300])
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may answer 413 and close before the upload ends
    raw = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           f"Content-Length: {64 << 20}\r\n\r\n").encode()
    assert status_of(send_raw(srv.direct_base, raw, shutdown_write=True)) == 413
    still_serving(srv)


def test_invalid_utf8(http_server):
    srv = http_server("utf8", record=False)
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":"\xff\xfe"}}}'
    r = post(srv, body, good_headers())
    assert r.status in (200, 400), (r.status, r.body[:300])
    if r.body:
        resp = r.rpc_response()
        assert "error" in resp or resp["result"].get("isError"), resp
    still_serving(srv)


def test_json_array_body(http_server):
    srv = http_server("batch", record=False)
    batch = [rpc_body("tools/list", id_=1), rpc_body("tools/list", id_=2)]
    r = post(srv, json.dumps(batch).encode(), good_headers())
    assert r.status < 500, (r.status, r.body[:300])
    msgs = r.messages()
    flat = [m for x in msgs for m in (x if isinstance(x, list) else [x])]
    assert flat and all("error" in m for m in flat), f"a batch must be refused (no batching since 2025-06-18): {r.body[:400]}"
    r = post(srv, b"[]", good_headers())
    assert r.status < 500 and r.body, r
    still_serving(srv)


def test_slowloris(http_server):
    srv = http_server("slowloris", record=False)
    host, port = "127.0.0.1", srv.port
    idle: list[socket.socket] = []
    try:
        for i in range(48):
            s = socket.create_connection((host, port), timeout=IDLE_CLOSE_WITHIN)
            if i % 2:
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
            idle.append(s)
        # A real client is served while they hang.
        for _ in range(5):
            still_serving(srv)
        closed = [False] * len(idle)

        def wait_closed(i: int, s: socket.socket) -> None:
            try:
                while s.recv(4096):
                    pass  # a 408 may come first
                closed[i] = True
            except (ConnectionResetError, OSError):
                closed[i] = True

        threads = [threading.Thread(target=wait_closed, args=(i, s)) for i, s in enumerate(idle)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(IDLE_CLOSE_WITHIN + 5)
        assert all(closed), f"{closed.count(False)} idle connections were not closed by the server"
        still_serving(srv)
    finally:
        for s in idle:
            s.close()
