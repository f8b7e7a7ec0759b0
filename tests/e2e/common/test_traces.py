"""Traces and JSON logs an operator can follow across instances (issue 40).

A small OTLP/HTTP collector (the `opentelemetry-proto` package decodes each
`ExportTraceServiceRequest`) receives, on both runtimes:

* one span per `tools/call`, named `tools/call <tool>`, whose span id is the content-derived
  one the answer's `X-Bernstein-Span-Id` names; a call with a `traceparent` (in `_meta` or the
  HTTP header) is that parent's child in its trace, a call without one is a root with the
  content-derived trace id;
* the store's `store.append` and `store.fsync` as children of each call;
* from an in-process worker, the agent run as a child of the claim call that granted it.

A collector that is down costs a log line and slows nothing. `--log-format json` (or
`BERNSTEIN_LOG_FORMAT=json`) writes every stderr line as a JSON object with timestamp, level and
message, and the trace id of the request or agent run it was written in.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from harness.http_raw import rpc
from harness.launch import base_env, run_cli
from harness.operator import start_dashboard

META_TRACE, META_PARENT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
HEADER_TRACE, HEADER_PARENT = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
QUICK_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "50"}


class Collector:
    """An OTLP/HTTP trace receiver on a free loopback port."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict, Span]] = []  # (resource attributes, span)
        self.cond = threading.Condition()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                with collector.cond:
                    for rs in req.resource_spans:
                        res = {a.key: a.value.string_value for a in rs.resource.attributes}
                        for ss in rs.scope_spans:
                            collector.spans.extend((res, s) for s in ss.spans)
                    collector.cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format, *args):  # noqa: A002 - quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, done, timeout: float = 30) -> list[Span]:
        """The spans received once `done(spans)` holds (the exporter batches on its own clock)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not done([s for _, s in self.spans]):
                left = deadline - time.monotonic()
                assert left > 0, f"spans received: {[s.name for _, s in self.spans]}"
                self.cond.wait(left)
            return [s for _, s in self.spans]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def content_ids(method: str, params: dict) -> tuple[str, str]:
    """The trace and span ids the server derives from a request (docs/FORMATS.md)."""
    pre = {"method": method, "params": {k: v for k, v in params.items() if k != "_meta"}}
    digest = hashlib.sha256(
        json.dumps(pre, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    return digest[:32], digest[:16]


def named(spans: list[Span], name: str) -> list[Span]:
    return [s for s in spans if s.name == name]


def children(spans: list[Span], parent: Span, name: str) -> list[Span]:
    return [s for s in spans if s.name == name and s.parent_span_id == parent.span_id
            and s.trace_id == parent.trace_id]


def test_each_call_is_one_span_with_its_parent_and_the_store_calls_as_children(http_server):
    collector = Collector()
    try:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, **QUICK_EXPORT}
        srv = http_server("traces", env=env, record=False)
        base = srv.direct_base
        meta_tp = f"00-{META_TRACE}-{META_PARENT}-01"
        with_meta = {"name": "bernstein_status", "arguments": {}, "_meta": {"traceparent": meta_tp}}
        root = {"name": "bernstein_run", "arguments": {"goal": "traced without a parent"}}
        with_header = {"name": "bernstein_run", "arguments": {"goal": "traced by its header"}}
        answers = [
            rpc(base, "tools/call", with_meta, id_=1),
            rpc(base, "tools/call", root, id_=2),
            rpc(base, "tools/call", with_header, id_=3,
                extra={"traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"}),
        ]
        assert [a.status for a in answers] == [200, 200, 200]
        span_ids = [a.headers["x-bernstein-span-id"] for a in answers]

        def complete(spans: list[Span]) -> bool:
            calls = [s for s in spans if s.name.startswith("tools/call ")]
            return len(calls) >= 3 and all(children(spans, c, "store.fsync") for c in calls)

        spans = collector.wait_for(complete)
        calls = [s for s in spans if s.name.startswith("tools/call ")]
        assert sorted(s.span_id.hex() for s in calls) == sorted(span_ids), "one span per call"

        [status] = named(spans, "tools/call bernstein_status")
        assert status.span_id.hex() == span_ids[0]
        assert (status.trace_id.hex(), status.parent_span_id.hex()) == (META_TRACE, META_PARENT)
        assert status.kind == Span.SPAN_KIND_SERVER

        runs = {s.span_id.hex(): s for s in named(spans, "tools/call bernstein_run")}
        trace, span = content_ids("tools/call", root)
        assert span == span_ids[1]
        assert (runs[span].trace_id.hex(), runs[span].parent_span_id) == (trace, b""), "a root"
        by_header = runs[span_ids[2]]
        assert (by_header.trace_id.hex(), by_header.parent_span_id.hex()) == (HEADER_TRACE, HEADER_PARENT)

        for call in calls:
            assert len(children(spans, call, "store.append")) == 1, call.name
            assert children(spans, call, "store.fsync"), call.name
        resource = collector.spans[0][0]
        assert resource["service.name"] == "bernstein" and resource["bernstein.command"] == "mcp"
    finally:
        collector.close()


def test_a_collector_that_is_down_costs_a_log_line_and_slows_no_call(http_server):
    collector = Collector()
    endpoint = collector.endpoint
    collector.close()  # nothing listens there any more
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint + "/v1/traces", **QUICK_EXPORT}
    srv = http_server("traces-down", env=env, record=False)
    for i in range(5):
        reply = rpc(srv.direct_base, "tools/call", {"name": "bernstein_status", "arguments": {}}, id_=i)
        assert reply.status == 200
    srv.stop()
    err = srv.stderr_text()
    assert err.count("bernstein: traces: export to") == 1, err
    assert "spans exported to" in err and "lost to failed exports" in err, err


def json_lines(text: str) -> list[dict]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    for line in lines:
        assert {"timestamp", "level", "message"} <= line.keys(), line
        assert line["timestamp"].endswith("Z") and line["level"] in {"INFO", "WARN", "ERROR"}, line
    return lines


def test_json_logs_carry_every_line_of_the_plain_form(http_server, tmp_path):
    def serve(label: str, extra: list[str]) -> tuple[str, Path]:
        project = tmp_path / label
        assert run_cli(["init", str(project)]).returncode == 0
        srv = http_server(label, workdir=project, extra_args=extra, record=False)
        rpc(srv.direct_base, "tools/call", {"name": "bernstein_status", "arguments": {}})
        srv.stop()
        return srv.stderr_text(), project

    def shape(line: str, project: Path) -> str:  # the same line but for its project, port, counts
        return "".join("#" if c.isdigit() else c for c in line.replace(str(project), "<dir>"))

    plain, plain_dir = serve("plain", [])
    structured, json_dir = serve("json", ["--log-format", "json"])
    messages = [line["message"] for line in json_lines(structured)]
    assert [shape(m, json_dir) for m in messages] == [shape(line, plain_dir) for line in plain.splitlines()]
    assert any("serving MCP over HTTP at" in m for m in messages)


def test_the_log_format_comes_from_the_environment_and_a_bad_one_is_refused(http_server, workdir):
    srv = http_server("json-env", env={"BERNSTEIN_LOG_FORMAT": "json"}, record=False)
    srv.stop()
    assert json_lines(srv.stderr_text())
    bad = run_cli(["mcp", "--workdir", str(workdir)], env={"BERNSTEIN_LOG_FORMAT": "yaml"})
    assert bad.returncode == 2
    assert "BERNSTEIN_LOG_FORMAT=yaml is not a log format: use plain or json" in bad.stderr


def test_the_dashboard_logs_json_lines_too(bernstein_bin, workdir, runtime, tmp_path):
    assert run_cli(["init", str(workdir)]).returncode == 0
    log = tmp_path / "dashboard.stderr.log"
    proc, base = start_dashboard(bernstein_bin, workdir, runtime, log, ["--log-format", "json"])
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    messages = [line["message"] for line in json_lines(log.read_text())]
    assert any(f"serving the read-only dashboard at {base}/" in m for m in messages), messages


def test_an_agent_run_is_a_child_of_its_claim_and_its_lines_carry_the_trace(workdir, bernstein_bin):
    assert run_cli(["init", str(workdir)]).returncode == 0
    started = run_cli(["run", "follow me across the worker", "--workdir", str(workdir)])
    assert started.returncode == 0, started.stderr
    collector = Collector()
    err_path = Path(workdir) / "worker.stderr.log"
    env = base_env({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, **QUICK_EXPORT})
    with open(err_path, "wb") as err:
        worker = subprocess.Popen(
            [str(bernstein_bin), "worker", "--workdir", str(workdir), "--log-format", "json",
             "--exec", "echo working; echo 'RESULT: followed'"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
        try:
            spans = collector.wait_for(lambda spans: named(spans, "store.fsync")
                                       and any(s.name.startswith("agent run ") for s in spans))
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
            collector.close()
    [agent] = [s for s in spans if s.name.startswith("agent run ")]
    claims = {s.span_id: s for s in named(spans, "tools/call bernstein_claim")}
    claim = claims[agent.parent_span_id]
    assert agent.trace_id == claim.trace_id
    lines = json_lines(err_path.read_text())
    traced = [line for line in lines if line.get("trace_id") == agent.trace_id.hex()]
    assert any("working" in line["message"] for line in traced), lines
