"""Validation of a recorded stdio conversation against the official MCP schemas.

`tee_server.py` leaves, per server process, the client's lines (`*.client.jsonl`), the server's
stdout lines (`*.server.jsonl`), its stderr and its exit status. `check_recording` replays them:

* every server line must be one JSON-RPC message (nothing else may appear on stdout);
* each response is matched to its request by id and validated as the envelope *and* as the
  result type of the request's method (initialize -> InitializeResult, tools/call ->
  CallToolResult, server/discover -> DiscoverResult, ...), in the revision in force for that
  request: the `_meta` protocol version for a 2026-07-28 request, else the version the
  `initialize` answer negotiated, else the newest handshake revision;
* errors are checked as the revision's error envelope (and, at 2026-07-28, the typed error for
  the code); an error to a request whose id could not be read may carry `"id": null` (JSON-RPC
  2.0 section 5) or omit the id (MCP 2025-11-25 and later);
* server notifications and requests are checked against the type named by their method;
* every well-formed client request is answered exactly once, and nothing else is answered;
* the process did not panic (exit 101 or a panic message on stderr).

It reports problems as strings; it never raises on bad server output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import schema as mcp_schema

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"

# Result type of each request method the server may answer.
RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
}

# Results of the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`), checked against
# `ext-tasks/schema.json`; a task-creating tools/call is recognised by `resultType: "task"`.
EXTENSION_SCHEMA = "ext-tasks"
EXTENSION_RESULT_TYPES = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}

# 2026-07-28 names the error object of the standard JSON-RPC codes...
MODERN_ERROR_OBJECTS = {
    -32700: "ParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
}
# ...and whole error responses for its own codes.
MODERN_ERROR_RESPONSES = {
    -32020: "HeaderMismatchError",
    -32021: "MissingRequiredClientCapabilityError",
    -32022: "UnsupportedProtocolVersionError",
}

DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
_ID_PATTERN = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)')


def _id_key(value) -> str:
    # 1 and "1" are different ids; json.dumps keeps them apart.
    return json.dumps(value, sort_keys=True)


@dataclass
class Request:
    method: str
    params: object
    line_no: int


@dataclass
class Recording:
    """One recorded server process."""

    prefix: Path
    client_lines: list[bytes] = field(default_factory=list)
    server_lines: list[bytes] = field(default_factory=list)
    stderr: str = ""
    exit_code: int | None = None

    @classmethod
    def load(cls, prefix: Path) -> Recording:
        def lines(suffix: str) -> list[bytes]:
            p = Path(str(prefix) + suffix)
            if not p.exists():
                return []
            return p.read_bytes().splitlines()

        rec = cls(prefix)
        rec.client_lines = lines(".client.jsonl")
        rec.server_lines = lines(".server.jsonl")
        err = Path(str(prefix) + ".stderr.log")
        rec.stderr = err.read_text(encoding="utf-8", errors="replace") if err.exists() else ""
        ex = Path(str(prefix) + ".exit")
        if ex.exists():
            text = ex.read_text(encoding="ascii").strip()
            rec.exit_code = int(text) if text.lstrip("-").isdigit() else None
        return rec

    def server_messages(self) -> list:
        out = []
        for line in self.server_lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(None)
        return out


def _well_formed_request(msg) -> bool:
    return (
        isinstance(msg, dict)
        and msg.get("jsonrpc") == "2.0"
        and isinstance(msg.get("method"), str)
        and "id" in msg
        and (isinstance(msg["id"], str) or (isinstance(msg["id"], int) and not isinstance(msg["id"], bool)))
        and ("params" not in msg or isinstance(msg["params"], dict))
    )


def _request_version(params) -> str | None:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict):
            v = meta.get(PROTOCOL_VERSION_META)
            if isinstance(v, str):
                return v
    return None


class _Checker:
    def __init__(self, rec: Recording, max_message_bytes: int):
        self.rec = rec
        self.max_message_bytes = max_message_bytes
        self.problems: list[str] = []
        self.requests: dict[str, Request] = {}
        self.invalid_ids: set[str] = set()
        self.answered: dict[str, int] = {}
        # Requests the client cancelled (`notifications/cancelled`): the server may leave them
        # unanswered (MCP cancellation: receivers SHOULD NOT respond to a cancelled request).
        self.cancelled: set[str] = set()
        self.negotiated: str | None = None
        self.modern_seen = False

    def problem(self, where: str, text: str) -> None:
        self.problems.append(f"{where}: {text}")

    # -- client side: which requests exist ----------------------------------------------

    def collect_requests(self) -> None:
        for n, line in enumerate(self.rec.client_lines, 1):
            if len(line) > self.max_message_bytes:
                continue  # oversize: the server cannot know its id
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):
                # Unparseable (or too deep for Python): the server may still have read its id.
                found = _ID_PATTERN.search(line)
                if found:
                    self.invalid_ids.add(_id_key(json.loads(found.group(1))))
                continue
            for m in msg if isinstance(msg, list) else [msg]:
                if (
                    isinstance(m, dict)
                    and m.get("method") == "notifications/cancelled"
                    and isinstance(m.get("params"), dict)
                    and isinstance(m["params"].get("requestId"), (str, int))
                ):
                    self.cancelled.add(_id_key(m["params"]["requestId"]))
                if _well_formed_request(m):
                    if _request_version(m.get("params")) in mcp_schema.MODERN_REVISIONS:
                        self.modern_seen = True
                    key = _id_key(m["id"])
                    # Ids are never reused within a session; if one is, keep the first method.
                    self.requests.setdefault(key, Request(m["method"], m.get("params"), n))
                elif (
                    isinstance(m, dict)
                    and "result" not in m
                    and "error" not in m
                    and isinstance(m.get("id"), (str, int))
                ):
                    # An invalid request whose id is still readable: its error may echo the id.
                    self.invalid_ids.add(_id_key(m["id"]))

    # -- server side ----------------------------------------------------------------------

    def revision_for(self, req: Request | None) -> str:
        v = _request_version(req.params) if req else None
        if v is not None:
            if v in mcp_schema.KNOWN_REVISIONS:
                return v
            # A per-request version the server does not know is still a modern-style request.
            return mcp_schema.NEWEST_MODERN
        return mcp_schema.validation_revision(self.negotiated)

    def check_all(self) -> None:
        for n, line in enumerate(self.rec.server_lines, 1):
            where = f"{self.rec.prefix.name} server line {n}"
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):
                self.problem(where, f"not JSON (stdout must carry only JSON-RPC): {line[:200]!r}")
                continue
            if isinstance(msg, list):
                if not msg:
                    self.problem(where, "empty batch")
                for i, m in enumerate(msg):
                    self.check_message(m, f"{where}[{i}]")
            else:
                self.check_message(msg, where)
        self.check_answered()
        self.check_no_panic()

    def check_message(self, msg, where: str) -> None:
        if not isinstance(msg, dict):
            self.problem(where, f"not a JSON object: {str(msg)[:200]}")
            return
        if msg.get("jsonrpc") != "2.0":
            self.problem(where, f"jsonrpc must be \"2.0\": {str(msg)[:200]}")
        if "method" in msg:
            self.check_server_initiated(msg, where)
        elif "result" in msg and "error" in msg:
            self.problem(where, "has both result and error")
        elif "result" in msg:
            self.check_result(msg, where)
        elif "error" in msg:
            self.check_error(msg, where)
        else:
            self.problem(where, f"neither request, notification nor response: {str(msg)[:200]}")

    def check_server_initiated(self, msg: dict, where: str) -> None:
        if self.negotiated is None and self.modern_seen:
            rev = mcp_schema.NEWEST_MODERN
        else:
            rev = mcp_schema.validation_revision(self.negotiated)
        sch = mcp_schema.load(rev)
        envelope = "JSONRPCRequest" if "id" in msg else "JSONRPCNotification"
        self.problems.extend(f"{where}: {e}" for e in sch.errors(envelope, msg))
        type_name = sch.def_for_method(msg.get("method", ""))
        if type_name is None:
            self.problem(where, f"server sent unknown method {msg.get('method')!r}")
        else:
            self.problems.extend(f"{where}: {e}" for e in sch.errors(type_name, msg))

    def _match(self, msg: dict, where: str) -> Request | None:
        if "id" not in msg or msg["id"] is None:
            return None
        key = _id_key(msg["id"])
        self.answered[key] = self.answered.get(key, 0) + 1
        if self.answered[key] > 1:
            self.problem(where, f"id {msg['id']!r} answered more than once")
        req = self.requests.get(key)
        if req is None and key not in self.invalid_ids:
            self.problem(where, f"response to id {msg['id']!r}, which no request carried")
        return req

    def check_result(self, msg: dict, where: str) -> None:
        req = self._match(msg, where)
        if req is not None and req.method == "initialize" and isinstance(msg.get("result"), dict):
            pv = msg["result"].get("protocolVersion")
            if isinstance(pv, str):
                self.negotiated = pv
        rev = self.revision_for(req)
        sch = mcp_schema.load(rev)
        self.problems.extend(f"{where}: {e}" for e in sch.errors(sch.result_envelope(), msg))
        if req is None:
            return
        ext_type = self.extension_type(req, msg.get("result"), rev)
        if ext_type is not None:
            ext = mcp_schema.load(EXTENSION_SCHEMA)
            self.problems.extend(
                f"{where} ({req.method}, {EXTENSION_SCHEMA}): {e}" for e in ext.errors(ext_type, msg["result"])
            )
            return
        type_name = self.result_type(req, msg.get("result"), sch)
        if type_name is None:
            return
        if not sch.has(type_name):
            self.problem(where, f"{req.method} answered with a result, but {rev} has no {type_name}")
            return
        self.problems.extend(f"{where} ({req.method}): {e}" for e in sch.errors(type_name, msg["result"]))

    @staticmethod
    def extension_type(req: Request, result, rev: str) -> str | None:
        if rev not in mcp_schema.MODERN_REVISIONS:
            return None
        if req.method == "tools/call" and isinstance(result, dict) and result.get("resultType") == "task":
            return "CreateTaskResult"
        return EXTENSION_RESULT_TYPES.get(req.method)

    @staticmethod
    def result_type(req: Request, result, sch) -> str | None:
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            return "InputRequiredResult"
        if req.method == "tools/call" and isinstance(req.params, dict) and "task" in req.params:
            return "CreateTaskResult" if sch.has("CreateTaskResult") else None
        return RESULT_TYPES.get(req.method)

    def check_error(self, msg: dict, where: str) -> None:
        req = self._match(msg, where)
        rev = self.revision_for(req)
        sch = mcp_schema.load(rev)
        unaddressed = msg.get("id", None) is None
        if unaddressed:
            # JSON-RPC 2.0 requires `"id": null` when the id could not be read; MCP 2025-11-25+
            # lets it be omitted. Either way the rest must be a valid error response.
            extra = set(msg) - {"jsonrpc", "id", "error"}
            if extra:
                self.problem(where, f"unexpected members {sorted(extra)}")
            self.problems.extend(f"{where}: {e}" for e in sch.errors_at(sch.error_object_pointer(), msg.get("error")))
        else:
            self.problems.extend(f"{where}: {e}" for e in sch.errors(sch.error_envelope(), msg))
        err = msg.get("error")
        code = err.get("code") if isinstance(err, dict) else None
        if rev in mcp_schema.MODERN_REVISIONS and isinstance(code, int):
            if code in MODERN_ERROR_OBJECTS:
                self.problems.extend(f"{where}: {e}" for e in sch.errors(MODERN_ERROR_OBJECTS[code], err))
            elif code in MODERN_ERROR_RESPONSES and not unaddressed:
                self.problems.extend(f"{where}: {e}" for e in sch.errors(MODERN_ERROR_RESPONSES[code], msg))

    def check_answered(self) -> None:
        for key, req in self.requests.items():
            if key not in self.answered and key not in self.cancelled:
                self.problem(f"{self.rec.prefix.name} client line {req.line_no}", f"request {req.method} id {key} was never answered")

    def check_no_panic(self) -> None:
        if self.rec.exit_code == 101 or "panicked at" in self.rec.stderr:
            tail = self.rec.stderr[-2000:]
            self.problem(f"{self.rec.prefix.name} process", f"server panicked (exit {self.rec.exit_code}); stderr tail:\n{tail}")


def check_recording(
    prefix: Path,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    require_all_answered: bool = True,
) -> list[str]:
    """Problems found in the recording at `prefix` (empty when every message is valid)."""
    rec = Recording.load(prefix)
    c = _Checker(rec, max_message_bytes)
    c.collect_requests()
    if not require_all_answered:
        c.check_answered = lambda: None  # type: ignore[method-assign]
    c.check_all()
    return c.problems


def recordings_in(logdir: Path) -> list[Path]:
    """Prefixes of every recording in `logdir`."""
    return sorted(Path(str(p)[: -len(".server.jsonl")]) for p in logdir.glob("*.server.jsonl"))
