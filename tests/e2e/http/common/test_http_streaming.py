"""Raw HTTP, both runtimes: answers streamed as they happen, unique SSE event ids, and version
negotiation over the legacy HTTP+SSE transport.

* A `bernstein_run_status` long poll with a progress token over `POST /mcp` streams its SSE
  answer: the head and the current tick arrive while the poll still waits, the next tick when
  the ledger moves, then the result; no `Content-Length`. The same over `/sse`.
* Event ids are unique within their stream and across `/sse` streams; the part before the
  first `-` is the span id.
* The header-less `server/discover` probe of an auto-negotiating client on the messages
  endpoint is answered on the stream with `-32022` naming only handshake revisions, and the
  client's `initialize` then succeeds.

No sleeps: each step waits for the event the previous one causes.
"""

from __future__ import annotations

import json
import socket

from harness.http_raw import call_tool, rpc_body, split, status_of
from harness.payloads import ok_payload

TOKEN = "tick-token"


class Events:
    """SSE events read off a socket, one at a time (after an HTTP head)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self.buf:
            assert self._fill(), self.buf
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        return status_of(head), headers

    def next(self) -> dict | None:
        """The next event ({id, event, data}); None when the server closed the stream."""
        while True:
            while self.buf.startswith(b":"):  # comments (keep-alives)
                if b"\n\n" not in self.buf:
                    break
                self.buf = self.buf.split(b"\n\n", 1)[1]
            if b"\n\n" in self.buf and not self.buf.startswith(b":"):
                raw, self.buf = self.buf.split(b"\n\n", 1)
                event: dict = {"data": []}
                for line in raw.decode().split("\n"):
                    key, _, value = line.partition(": ")
                    if key == "data":
                        event["data"].append(value)
                    else:
                        event[key] = value
                event["data"] = "\n".join(event["data"])
                return event
            if not self._fill():
                return None

    def message(self) -> dict:
        event = self.next()
        assert event is not None and event["event"] == "message", event
        return json.loads(event["data"])


def connect(srv) -> socket.socket:
    return socket.create_connection(split(srv.direct_base), timeout=60)


def post(srv, path: str, msg: dict, headers: dict[str, str]) -> Events:
    host, port = split(srv.direct_base)
    body = json.dumps(msg).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(body)}\r\n\r\n"
    s = connect(srv)
    s.sendall(head.encode() + body)
    return Events(s)


def open_sse(srv) -> tuple[Events, dict]:
    host, port = split(srv.direct_base)
    s = connect(srv)
    s.sendall(f"GET /sse HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    events = Events(s)
    status, headers = events.head()
    assert status == 200, (status, headers)
    endpoint = events.next()
    assert endpoint is not None and endpoint["event"] == "endpoint", endpoint
    return events, {"event": endpoint, "span": headers["x-bernstein-span-id"]}


def payload(reply) -> dict:
    return ok_payload(reply.rpc_response()["result"])


def tool(srv, name: str, args: dict) -> dict:
    return payload(call_tool(srv.direct_base, name, args))


def run_of_three(srv) -> tuple[str, list[str]]:
    """A run of a root task waiting for two subtasks: progress 0 of 3."""
    root = tool(srv, "bernstein_run", {"goal": "root of a streamed run"})["task_id"]
    for goal in ("child a", "child b"):
        tool(srv, "bernstein_run", {"goal": goal, "parent_task_id": root})
    return root, ["child a", "child b"]


def work_one(srv) -> None:
    claimed = tool(srv, "bernstein_claim", {"claimer_id": "stream-worker"})
    tool(srv, "bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "done"})


def long_poll(run_id: str, id_: int = 5) -> dict:
    return rpc_body(
        "tools/call",
        {"name": "bernstein_run_status", "arguments": {"run_id": run_id, "wait_ms": 60000},
         "_meta": {"progressToken": TOKEN}},
        id_=id_,
    )


def tick_of(msg: dict) -> tuple[int, int]:
    assert msg["method"] == "notifications/progress", msg
    assert msg["params"]["progressToken"] == TOKEN, msg
    return msg["params"]["progress"], msg["params"]["total"]


def follow_the_run(srv, next_message) -> list[dict]:
    """The ticks and the result of a long poll of a run of three, as the run moves."""
    first = next_message()
    assert tick_of(first) == (0, 3), first  # sent while the poll still waits
    work_one(srv)
    second = next_message()
    assert tick_of(second) == (1, 3), second
    work_one(srv)
    rest = [next_message(), next_message()]
    assert tick_of(rest[0]) == (3, 3), rest
    result = rest[1]
    assert result["id"] == 5 and result["result"]["isError"] is False, result
    sc = result["result"]["structuredContent"]
    assert (sc.get("result") or sc)["status"] == "completed", result
    return [first, second, *rest]


def test_a_long_poll_streams_its_ticks_then_its_result(http_server):
    srv = http_server("stream-post", tier="standard", record=False)
    root, _ = run_of_three(srv)
    events = post(srv, "/mcp", long_poll(root),
                  {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    status, headers = events.head()
    assert status == 200 and headers["content-type"] == "text/event-stream", headers
    assert "content-length" not in headers, headers
    span = headers["x-bernstein-span-id"]
    ids: list[str] = []

    def next_message() -> dict:
        event = events.next()
        assert event is not None, "the stream ended early"
        ids.append(event["id"])
        return json.loads(event["data"])

    follow_the_run(srv, next_message)
    assert events.next() is None, "the answer ends the stream"
    assert ids == [f"{span}-{n}" for n in range(1, 5)], ids
    assert {i.split("-")[0] for i in ids} == {span}


def test_a_long_poll_over_sse_streams_its_ticks_and_ids_are_unique(http_server):
    srv = http_server("stream-sse", tier="standard", record=False)
    root, _ = run_of_three(srv)
    stream, opened = open_sse(srv)
    other, other_opened = open_sse(srv)
    # Two streams' endpoint events never share an id; both name the stream's span.
    assert opened["event"]["id"] != other_opened["event"]["id"], (opened, other_opened)
    assert opened["event"]["id"].split("-")[0] == opened["span"]
    path = opened["event"]["data"]
    accepted = post(srv, path, long_poll(root), {})
    ids = [opened["event"]["id"]]

    def next_message() -> dict:
        event = stream.next()
        assert event is not None and event["event"] == "message", event
        ids.append(event["id"])
        return json.loads(event["data"])

    messages = follow_the_run(srv, next_message)
    assert accepted.head()[0] == 202
    spans = {i.split("-")[0] for i in ids[1:]}
    assert len(spans) == 1, ids
    assert len(set(ids)) == len(ids), ids
    # The same message again on the stream: new ids (the span is the same).
    again = post(srv, path, rpc_body("tools/list", id_=9), {})
    assert again.head()[0] == 202
    first = stream.next()
    again = post(srv, path, rpc_body("tools/list", id_=9), {})
    assert again.head()[0] == 202
    second = stream.next()
    assert first["id"] != second["id"] and first["id"].split("-")[0] == second["id"].split("-")[0]
    assert first["id"] not in ids and len(messages) == 4
    for s in (stream, other):
        s.sock.close()


def test_the_discover_probe_over_sse_falls_back_to_initialize(http_server):
    srv = http_server("sse-probe", record=False)
    stream, opened = open_sse(srv)
    path = opened["event"]["data"]
    probe = rpc_body("server/discover", id_=1, version="2026-07-28")
    # What TypeScript and Python SDK 2.x send in mode 'auto': no MCP-Protocol-Version header.
    reply = post(srv, path, probe, {})
    assert reply.head()[0] == 202
    answer = stream.message()
    assert answer["id"] == 1, answer
    error = answer["error"]
    assert error["code"] == -32022, answer
    supported = error["data"]["supported"]
    assert supported and "2026-07-28" not in supported and "2025-11-25" in supported, answer
    # With the header the answer is the same (no 400 for the mirror headers).
    reply = post(srv, path, rpc_body("server/discover", id_=2, version="2026-07-28"),
                 {"MCP-Protocol-Version": "2026-07-28"})
    assert reply.head()[0] == 202
    assert stream.message()["error"]["code"] == -32022
    init = rpc_body("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "probe", "version": "0"}}, id_=3)
    assert post(srv, path, init, {}).head()[0] == 202
    answer = stream.message()
    assert answer["id"] == 3 and answer["result"]["protocolVersion"] == "2025-11-25", answer
    stream.sock.close()
