"""Raw HTTP against a running `bernstein mcp --transport http`: exact requests (headers, bodies,
broken framing) for the tests that probe the transport itself rather than the MCP SDK.

`request` sends one request over a fresh connection and returns status, lower-cased headers
and body. `rpc` builds a well-formed JSON-RPC POST for either era: the handshake era needs
only `MCP-Protocol-Version`; 2026-07-28 requests carry `params._meta` with the protocol
version and client capabilities, and mirror `Mcp-Method` / `Mcp-Name` in headers. `send_raw`
writes arbitrary bytes on a socket and reads what comes back until the server closes.
"""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPS_META = "io.modelcontextprotocol/clientCapabilities"
INFO_META = "io.modelcontextprotocol/clientInfo"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)

    def messages(self) -> list:
        """The JSON-RPC messages of the body: a JSON document, or every SSE `data:` event."""
        ctype = self.headers.get("content-type", "")
        if "text/event-stream" in ctype:
            out, data = [], []
            for line in self.body.decode().splitlines() + [""]:
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif not line and data:
                    out.append(json.loads("\n".join(data)))
                    data = []
            return out
        return [self.json()] if self.body else []

    def rpc_response(self) -> dict:
        """The JSON-RPC response (the last message carrying `result` or `error`)."""
        for m in reversed(self.messages()):
            if isinstance(m, dict) and ("result" in m or "error" in m):
                return m
        raise AssertionError(f"no JSON-RPC response in {self.status} {self.body[:500]!r}")


def split(base: str) -> tuple[str, int]:
    hostport = base.split("://", 1)[1].split("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def request(base: str, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None, timeout: float = 60) -> Reply:
    host, port = split(base)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def rpc_body(method: str, params: dict | None = None, *, id_=1, version: str = HANDSHAKE) -> dict:
    params = dict(params or {})
    if version == MODERN:
        meta = dict(params.get("_meta") or {})
        meta.setdefault(VERSION_META, MODERN)
        meta.setdefault(CAPS_META, {})
        meta.setdefault(INFO_META, {"name": "bernstein-e2e", "version": "0"})
        params["_meta"] = meta
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params:
        msg["params"] = params
    return msg


def rpc_headers(msg: dict, *, version: str = HANDSHAKE, token: str | None = None,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    if version == MODERN:
        h["Mcp-Method"] = msg["method"]
        params = msg.get("params") or {}
        name = params.get("name") if msg["method"] in ("tools/call", "prompts/get") else params.get("uri")
        if isinstance(name, str):
            h["Mcp-Name"] = name
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    h.update(extra or {})
    return h


def rpc(base: str, method: str, params: dict | None = None, *, id_=1, version: str = HANDSHAKE,
        token: str | None = None, extra: dict[str, str] | None = None) -> Reply:
    msg = rpc_body(method, params, id_=id_, version=version)
    headers = rpc_headers(msg, version=version, token=token, extra=extra)
    return request(base, "POST", "/mcp", json.dumps(msg).encode(), headers)


def call_tool(base: str, name: str, arguments: dict | None = None, **kw) -> Reply:
    return rpc(base, "tools/call", {"name": name, "arguments": arguments or {}}, **kw)


def send_raw(base: str, data: bytes, *, timeout: float = 60, shutdown_write: bool = False) -> bytes:
    """Writes `data` on a fresh connection and reads until the server closes (or `timeout`)."""
    host, port = split(base)
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        if shutdown_write:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def status_of(raw: bytes) -> int:
    """The status code of the first HTTP response in `raw` (0 when there is none)."""
    line = raw.split(b"\r\n", 1)[0]
    parts = line.split()
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
        return int(parts[1])
    return 0
