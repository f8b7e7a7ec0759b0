"""Host pinning, origin checks and legacy SSE stream timeouts against the real binary (raw HTTP,
both runtimes): what a DNS-rebound page or a crowd of idle SSE clients can and cannot do.

* A `Host` the server does not answer for is `421` on every route, before discovery, auth or
  a stream slot; HTTP/1.1 without `Host` (or with two) is `400`; HTTP/1.0 without `Host` is
  aimed at the bind address. Names in BERNSTEIN_MCP_ALLOWED_HOSTS / `--allowed-hosts` are
  answered, and the protected-resource metadata names them, never a foreign host.
* A foreign `Origin` is `403` on every route.
* An idle legacy SSE stream gets keep-alive comments and is closed after
  BERNSTEIN_MCP_SSE_IDLE_SECS, freeing its place under BERNSTEIN_MCP_SSE_MAX_STREAMS; at that
  cap a new stream takes the place of the one idle longest.
"""

from __future__ import annotations

import json
import socket

import pytest

from harness.http_raw import rpc, request, send_raw, status_of
from harness.http_server import start_and_expect_failure

ISSUER = "https://issuer.example"
METADATA = "/.well-known/oauth-protected-resource"
STREAM = "/messages?stream=00112233445566778899aabbccddeeff"
ROUTES = [
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("GET", "/sse"),
    ("POST", STREAM),
    ("GET", METADATA),
    ("GET", METADATA + "/mcp"),
    ("GET", "/somewhere/else"),
]
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def raw_request(method: str, path: str, host: str | None, *, version: str = "1.1",
                extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/{version}\r\n"
    if host is not None:
        head += f"Host: {host}\r\n"
    head += extra
    head += f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\nConnection: close\r\n\r\n"
    return head.encode() + BODY


def body_of(reply: bytes) -> dict:
    return json.loads(reply.partition(b"\r\n\r\n")[2])


def authority(srv) -> str:
    return srv.direct_base.split("://", 1)[1]


@pytest.mark.parametrize("method,path", ROUTES)
def test_foreign_host_is_misdirected_on_every_route(http_server, method, path):
    srv = http_server("host-foreign", env={"BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}, record=False)
    for host in (f"rebind.attacker.example:{srv.port}", f"127.0.0.1:{srv.port + 1}",
                 f"localhost.attacker.example:{srv.port}"):
        reply = send_raw(srv.direct_base, raw_request(method, path, host))
        assert status_of(reply) == 421, (host, reply[:300])
        err = body_of(reply)
        assert err["jsonrpc"] == "2.0" and err["id"] is None, err
        assert err["error"]["code"] == -32600, err
        assert b"attacker" not in reply, reply[:400]
    # No Origin, as a DNS-rebound page's same-origin request sends: still refused.
    for tricky in (f"localhost@evil.example:{srv.port}", f"evil.example@localhost:{srv.port}"):
        assert status_of(send_raw(srv.direct_base, raw_request(method, path, tricky))) == 400, tricky


@pytest.mark.parametrize("method,path", ROUTES)
def test_missing_or_repeated_host(http_server, method, path):
    srv = http_server("host-missing", env={"BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}, record=False)
    reply = send_raw(srv.direct_base, raw_request(method, path, None))
    assert status_of(reply) == 400, reply[:300]
    assert "Host" in body_of(reply)["error"]["message"]
    two = raw_request(method, path, authority(srv), extra=f"Host: {authority(srv)}\r\n")
    assert status_of(send_raw(srv.direct_base, two)) == 400


def test_http_1_0_without_host_names_the_bind_address(http_server):
    srv = http_server("host-http10", env={"BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}, record=False)
    reply = send_raw(srv.direct_base, raw_request("GET", METADATA + "/mcp", None, version="1.0"))
    assert status_of(reply) == 200, reply[:300]
    assert body_of(reply)["resource"] == f"http://{authority(srv)}/mcp"


@pytest.mark.parametrize("how", ["env", "flag"])
def test_allowed_hosts_are_answered_and_named(http_server, how):
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}
    extra_args = []
    if how == "env":
        env["BERNSTEIN_MCP_ALLOWED_HOSTS"] = "mcp.allowed.example, proxy.example:9443"
    else:
        extra_args = ["--allowed-hosts", "mcp.allowed.example,proxy.example:9443"]
    srv = http_server(f"host-allowed-{how}", env=env, extra_args=extra_args, record=False)
    assert "mcp.allowed.example:*" in srv.stderr_text(), srv.stderr_text()
    assert "proxy.example:9443" in srv.stderr_text()
    for host, resource in (
        ("MCP.Allowed.Example:8000", "http://mcp.allowed.example:8000/mcp"),
        ("mcp.allowed.example.", "http://mcp.allowed.example./mcp"),
        ("proxy.example:9443", "http://proxy.example:9443/mcp"),
        (f"localhost:{srv.port}", f"http://localhost:{srv.port}/mcp"),
    ):
        doc = request(srv.direct_base, "GET", METADATA + "/mcp", headers={"Host": host})
        assert doc.status == 200, (host, doc)
        assert doc.json()["resource"] == resource, doc.json()
        served = rpc(srv.direct_base, "ping", extra={"Host": host})
        assert served.status == 200 and "result" in served.rpc_response(), (host, served)
    for foreign in ("proxy.example:9444", "proxy.example", "evil.mcp.allowed.example:80"):
        assert request(srv.direct_base, "GET", METADATA, headers={"Host": foreign}).status == 421, foreign


def test_public_bind_answers_only_loopback_names_and_the_list(http_server):
    srv = http_server("host-public", host="0.0.0.0", env={
        "BERNSTEIN_MCP_TOKEN": "t0k", "BERNSTEIN_MCP_ALLOWED_HOSTS": "mcp.lan"}, record=False)
    log = srv.stderr_text()
    assert "localhost:" in log and "mcp.lan:*" in log and "0.0.0.0:" not in log.split("serving")[0], log
    for host, status in ((f"0.0.0.0:{srv.port}", 421), ("mcp.lan", 200), (f"127.0.0.1:{srv.port}", 200),
                         (f"10.1.2.3:{srv.port}", 421)):
        assert rpc(srv.direct_base, "ping", token="t0k", extra={"Host": host}).status == status, host


@pytest.mark.parametrize("entry", ["user@evil.example", "http://x.example", "x.example/p", "x.example:99999"])
def test_bad_allowed_host_entries_refuse_to_start(launcher, entry):
    done = start_and_expect_failure(launcher, host="127.0.0.1", env={"BERNSTEIN_MCP_ALLOWED_HOSTS": entry})
    assert done.returncode != 0, done
    assert "BERNSTEIN_MCP_ALLOWED_HOSTS" in done.stderr and entry in done.stderr, done.stderr


@pytest.mark.parametrize("method,path", ROUTES)
def test_foreign_origin_is_forbidden_on_every_route(http_server, method, path):
    srv = http_server("origin", env={"BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}, record=False)
    for origin in ("https://evil.example", "null", "http://localhost.evil.example", f"http://127.0.0.1@evil.example"):
        reply = send_raw(srv.direct_base, raw_request(method, path, authority(srv), extra=f"Origin: {origin}\r\n"))
        assert status_of(reply) == 403, (origin, reply[:300])
        assert body_of(reply)["error"]["code"] == -32600


def open_sse(srv, host: str | None = None) -> tuple[socket.socket, bytes]:
    """Opens `GET /sse`; returns the socket and what arrived up to the end of the head."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    s.sendall(f"GET /sse HTTP/1.1\r\nHost: {host or authority(srv)}\r\nAccept: text/event-stream\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    return s, got


def read_to_eof(s: socket.socket, got: bytes = b"") -> bytes:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            return got
        got += chunk


def test_idle_sse_streams_get_keepalives_then_close_and_free_the_cap(http_server):
    env = {"BERNSTEIN_MCP_SSE_IDLE_SECS": "3", "BERNSTEIN_MCP_SSE_KEEPALIVE_SECS": "1",
           "BERNSTEIN_MCP_SSE_MAX_STREAMS": "1"}
    srv = http_server("sse-idle", env=env, record=False)
    # Foreign-Host streams never take the one place.
    for _ in range(3):
        s, got = open_sse(srv, host=f"rebind.attacker.example:{srv.port}")
        assert status_of(got) == 421, got
        s.close()
    first, got = open_sse(srv)
    assert status_of(got) == 200, got
    # At the cap, a new stream takes the place of the one idle longest, which hears why.
    second, got2 = open_sse(srv)
    assert status_of(got2) == 200, got2
    evicted = read_to_eof(first, got).decode()
    first.close()
    assert evicted.endswith(": closed for a newer stream (the cap is reached)\n\n"), evicted
    # Nothing is POSTed: the stream gets keep-alives, then the server closes it.
    text = read_to_eof(second, got2).decode()
    second.close()
    assert "event: endpoint" in text, text
    assert ": keep-alive\n\n" in text, text
    assert text.endswith(": idle timeout, closing\n\n"), text
    assert "closed a legacy SSE stream" in srv.stderr_text()
    third, got = open_sse(srv)
    assert status_of(got) == 200, got
    third.close()
