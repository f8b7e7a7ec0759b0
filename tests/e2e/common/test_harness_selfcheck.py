"""Self-checks of the transcript validator: it must catch bad server output, or every
schema check of the suite would be vacuous. No server is started here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.transcript import check_recording

INIT_REQ = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
}
INIT_RES = {
    "jsonrpc": "2.0",
    "id": 0,
    "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    },
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def record(tmp_path: Path, client: list, server: list, exit_code: int = 0, stderr: str = "") -> Path:
    prefix = tmp_path / "rec"

    def lines(items) -> bytes:
        return b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in items)

    Path(str(prefix) + ".client.jsonl").write_bytes(lines(client))
    Path(str(prefix) + ".server.jsonl").write_bytes(lines(server))
    Path(str(prefix) + ".stderr.log").write_text(stderr)
    Path(str(prefix) + ".exit").write_text(f"{exit_code}\n")
    return prefix


def tools_list(id, version_meta=None):
    params = {"_meta": version_meta} if version_meta else {}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}


TOOL = {"name": "t", "inputSchema": {"type": "object"}}


def test_valid_handshake_transcript_passes(tmp_path):
    prefix = record(
        tmp_path,
        [INIT_REQ, tools_list(1)],
        [INIT_RES, {"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL]}}],
    )
    assert check_recording(prefix) == []


@pytest.mark.parametrize(
    "server_lines, needle",
    [
        ([INIT_RES, {"jsonrpc": "2.0", "id": 1, "result": {}}], "'tools' is a required property"),
        ([INIT_RES, b"log line on stdout"], "not JSON"),
        ([INIT_RES], "never answered"),
        ([INIT_RES, {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}] * 2, "more than once"),
        ([INIT_RES, {"jsonrpc": "2.0", "id": 99, "result": {}}], "no request carried"),
        ([INIT_RES, {"jsonrpc": "1.0", "id": 1, "result": {"tools": []}}], "jsonrpc"),
        ([INIT_RES, {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}], "integer"),
        ([INIT_RES, {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": 5}]}}], "tools/0"),
    ],
    ids=["missing-field", "not-json", "unanswered", "twice", "stray-id", "bad-jsonrpc", "bad-error", "bad-tool"],
)
def test_bad_handshake_output_is_caught(tmp_path, server_lines, needle):
    prefix = record(tmp_path, [INIT_REQ, tools_list(1)], server_lines)
    problems = check_recording(prefix)
    assert any(needle in p for p in problems), problems


def test_parse_error_with_null_id_is_valid(tmp_path):
    prefix = record(
        tmp_path,
        [b"{not json"],
        [{"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}],
    )
    assert check_recording(prefix) == []


def test_modern_results_are_checked_at_2026(tmp_path):
    good = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"tools": [TOOL], "resultType": "complete", "ttlMs": 0, "cacheScope": "public"},
    }
    assert check_recording(record(tmp_path, [tools_list(1, MODERN_META)], [good])) == []
    bad = json.loads(json.dumps(good))
    del bad["result"]["ttlMs"]
    problems = check_recording(record(tmp_path, [tools_list(1, MODERN_META)], [bad]))
    assert any("ttlMs" in p for p in problems), problems


def test_modern_unsupported_version_error_is_typed(tmp_path):
    meta = dict(MODERN_META, **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    missing_data = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "unsupported"}}
    problems = check_recording(record(tmp_path, [tools_list(1, meta)], [missing_data]))
    assert any("data" in p for p in problems), problems


def test_panic_is_caught(tmp_path):
    prefix = record(tmp_path, [INIT_REQ], [INIT_RES], exit_code=101, stderr="thread 'main' panicked at x.rs:1")
    assert any("panicked" in p for p in check_recording(prefix))
