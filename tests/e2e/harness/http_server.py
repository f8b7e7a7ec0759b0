"""Starting and stopping `bernstein mcp --transport http` for the HTTP end-to-end tests.

`HttpServer` starts one server process on a free port (`--port 0`), waits for the line the
server prints on stderr when it is ready ("serving MCP over HTTP at http://ADDR/mcp") by
polling that file, and stops the process at teardown (`kill()` ends it with SIGKILL, for a
test that wants a crash). Its stderr and exit status are written under the launcher's log
prefix, like the stdio recordings.

`RecordingProxy` is a tiny HTTP reverse proxy on another loopback port that SDK clients talk
to instead of the server. It copies every JSON-RPC body a client POSTs to `*.client.jsonl`
and every JSON-RPC message the server answers — a JSON body, or each `data:` payload of an
SSE response (streamable HTTP and the legacy `/sse` stream alike) — to `*.server.jsonl`, so
the suite's schema validator (`transcript.py`) checks HTTP conversations exactly as it checks
stdio ones. Raw tests that probe headers talk to the server directly.

Nothing here sleeps to synchronise: readiness is polled, streams end when their peer closes.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .launch import Launcher, base_env

READY = re.compile(r"serving MCP over HTTP at http://(\S+)/mcp")
# What `bernstein dashboard` says when it listens.
READY_DASHBOARD = re.compile(r"serving the read-only dashboard at http://(\S+)/ ")
READY_TIMEOUT = 60.0
_POLL = 0.02

# Hop-by-hop headers (RFC 9110 section 7.6.1) are never forwarded by the proxy.
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection", "host"}


class ServerStartError(RuntimeError):
    """The server exited (or never announced itself) instead of becoming ready."""


class HttpServer:
    """One `bernstein mcp --transport http` process, on a free port."""

    def __init__(
        self,
        launcher: Launcher,
        label: str,
        *,
        host: str = "127.0.0.1",
        tier: str | None = None,
        env: dict[str, str] | None = None,
        workdir: Path | None = None,
        runtime: str | None = None,
        extra_args: list[str] | None = None,
        record: bool = True,
    ):
        self.prefix = launcher._prefix(label)  # one set of log files per process
        argv = launcher.server_argv(tier=tier, runtime=runtime, workdir=workdir)
        argv += ["--transport", "http", "--host", host, "--port", "0", *(extra_args or [])]
        self.argv = argv
        self.stderr_path = Path(str(self.prefix) + ".stderr.log")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env=base_env(env),
            cwd=str(workdir or launcher.workdir),
        )
        self.proxy: RecordingProxy | None = None
        try:
            self.authority = self._wait_ready()
            if record:
                host_, port = split_authority(self.authority)
                self.proxy = RecordingProxy((host_, port), self.prefix)
        except BaseException:
            self.stop()
            raise

    # -- addresses -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return split_authority(self.authority)[1]

    @property
    def direct_base(self) -> str:
        """`http://127.0.0.1:PORT` of the server itself (wildcard binds reached via loopback)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        """The base URL clients should use: the recording proxy when there is one."""
        return self.proxy.base if self.proxy else self.direct_base

    @property
    def mcp_url(self) -> str:
        return self.base + "/mcp"

    @property
    def sse_url(self) -> str:
        return self.base + "/sse"

    # -- lifecycle -------------------------------------------------------------------------

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def _wait_ready(self) -> str:
        return wait_announced(self.proc, self.stderr_path, READY)

    def stop(self) -> int | None:
        """Stops the server (then the proxy) and records the exit status. Idempotent."""
        terminate(self.proc)
        if self.proxy is not None:
            self.proxy.close()
        return record_exit(self.proc, self._stderr, self.prefix)

    def kill(self) -> int | None:
        """SIGKILL at once (a crash: no shutdown, whatever was in flight is cut), then as `stop`:
        the proxy closes and the exit status is recorded. `stop` afterwards does nothing more."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        return self.stop()


def wait_announced(proc: subprocess.Popen, stderr_path: Path, pattern: re.Pattern) -> str:
    """The first group of `pattern` once the process's stderr shows it (the address a server
    announces when it listens); `ServerStartError` if it exits or stays silent too long."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        text = stderr_path.read_text(encoding="utf-8", errors="replace")
        m = pattern.search(text)
        if m:
            return m.group(1)
        if proc.poll() is not None:
            raise ServerStartError(f"server exited with {proc.returncode} before it was ready: {text[-2000:]}")
        if time.monotonic() > deadline:
            raise ServerStartError(f"server not ready after {READY_TIMEOUT}s: {text[-2000:]}")
        time.sleep(_POLL)  # polling a file for readiness, not synchronising on time


def terminate(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 20 s; a process already gone is left alone."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def record_exit(proc: subprocess.Popen, stderr, prefix: Path) -> int | None:
    """Closes the stderr log (once) and writes the exit status beside it; returns the status."""
    if not stderr.closed:
        stderr.close()
        Path(str(prefix) + ".exit").write_text(str(proc.returncode), encoding="ascii")
    return proc.returncode


def split_authority(authority: str) -> tuple[str, int]:
    host, _, port = authority.rpartition(":")
    host = host.strip("[]")
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return host, int(port)


def start_and_expect_failure(launcher: Launcher, *, host: str, env: dict[str, str] | None = None,
                             extra_args: list[str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs a server command line that must refuse to start; returns its completed process."""
    argv = launcher.server_argv() + ["--transport", "http", "--host", host, "--port", "0", *(extra_args or [])]
    return subprocess.run(argv, env=base_env(env), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, cwd=str(launcher.workdir))


class _Backlogged(ThreadingHTTPServer):
    """The standard server's listen backlog is 5: a burst of clients (a crowd of long polls)
    would be reset before the proxy accepts them."""

    request_queue_size = 256


class RecordingProxy:
    """A reverse proxy on 127.0.0.1 that records the JSON-RPC traffic it forwards."""

    def __init__(self, upstream: tuple[str, int], prefix: Path):
        self.upstream = upstream
        self._lock = threading.Lock()
        self._closed = False
        self._client = open(str(prefix) + ".client.jsonl", "ab")
        self._server = open(str(prefix) + ".server.jsonl", "ab")
        proxy = self

        class Handler(_ForwardingHandler):
            owner = proxy

        self.httpd = _Backlogged(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="recording-proxy", daemon=True)
        self._thread.start()

    def _write(self, f, body: bytes) -> None:
        body = body.strip()
        if not body:
            return
        try:
            # One message per line, as the stdio recordings have it.
            line = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False).encode()
        except ValueError:
            line = body.replace(b"\r", b" ").replace(b"\n", b" ")
        with self._lock:
            if not self._closed:
                f.write(line + b"\n")
                f.flush()

    def record_client(self, body: bytes) -> None:
        self._write(self._client, body)

    def record_server(self, body: bytes) -> None:
        """Records a server body if it is JSON-RPC (HTTP-level error bodies are not)."""
        try:
            doc = json.loads(body)
        except ValueError:
            return
        items = doc if isinstance(doc, list) else [doc]
        if any(isinstance(m, dict) and "jsonrpc" in m for m in items):
            self._write(self._server, body)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        with self._lock:
            self._closed = True
            self._client.close()
            self._server.close()


class _ForwardingHandler(BaseHTTPRequestHandler):
    """Forwards one request per connection (HTTP/1.0 towards the client, so a streamed SSE
    body simply ends when the connection closes)."""

    protocol_version = "HTTP/1.0"
    owner: RecordingProxy

    def log_message(self, format, *args):  # noqa: A002 - quiet; the server logs for itself
        return

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.command == "POST":
            self.owner.record_client(body)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        conn = http.client.HTTPConnection(*self.owner.upstream, timeout=None)
        try:
            conn.request(self.command, self.path, body=body if body else None, headers=headers)
            resp = conn.getresponse()
            ctype = resp.getheader("Content-Type", "") or ""
            streamed = "text/event-stream" in ctype
            self.send_response_only(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() in _HOP or k.lower() == "content-length":
                    continue
                self.send_header(k, v)
            if streamed:
                self.end_headers()
                self.wfile.flush()
                self._relay_events(resp)
            else:
                data = resp.read()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if data and "json" in ctype:
                    self.owner.record_server(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            conn.close()

    def _relay_events(self, resp) -> None:
        data: list[bytes] = []
        client_gone = False
        while True:
            line = resp.readline()
            if not line:
                break
            if not client_gone:
                try:
                    self.wfile.write(line)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    client_gone = True
            text = line.rstrip(b"\r\n")
            if text.startswith(b"data:"):
                chunk = text[5:]
                data.append(chunk[1:] if chunk.startswith(b" ") else chunk)
            elif not text:
                if data:
                    self.owner.record_server(b"\n".join(data))
                data = []
            if client_gone:
                break

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _forward
