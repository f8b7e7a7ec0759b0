#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets from the recorded journals in tests/fixtures/.

    fuzz/seeds.py [OUT_DIR]        (default: fuzz/corpus)

One directory per target, one file per seed, named by the SHA-1 of its content (as libFuzzer
names what it finds), so re-running is idempotent and seeds never pile up. The corpus is
generated, never committed: `scripts/fuzz-smoke.sh` runs this first.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures"

# fixture::facts(selector): selector % 7 picks the revision (0: none, 1..6: REVISIONS),
# (selector / 7) % 3 the transport (0: stdio). These are stdio selectors per revision.
STDIO_SELECTOR = {None: 0, "2024-11-05": 1, "2025-03-26": 2, "2025-06-18": 3, "2025-11-25": 4, "2026-07-28": 5}


def fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if (p / "ledger.jsonl").is_file())


def lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line]


def http_post(body: bytes, version: str | None, chunked: bool = False, extra: str = "") -> bytes:
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8053\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
    )
    if version:
        head += f"MCP-Protocol-Version: {version}\r\n"
    head += extra
    if chunked:
        mid = len(body) // 2
        parts = [body[:mid], body[mid:]]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + payload
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def seeds() -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {name: [] for name in (
        "request_path", "tool_call", "http_request", "line_framer", "ledger_record",
        "ledger_verify", "torn_tail", "canonical_json", "run_handle", "capsule", "handle_ledger",
        "request_meta", "project_files")}
    for fx in fixtures():
        meta = json.loads((fx / "fixture.json").read_text())
        requests = lines(fx / "requests.jsonl")
        responses = lines(fx / "responses.jsonl")
        ledger = (fx / "ledger.jsonl").read_bytes()
        ledger_lines = lines(fx / "ledger.jsonl")
        revision = None
        for req in requests:
            try:
                msg = json.loads(req)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("method") == "initialize":
                revision = msg["params"].get("protocolVersion")
            meta_rev = None
            if isinstance(msg, dict):
                meta_rev = ((msg.get("params") or {}).get("_meta") or {}).get(
                    "io.modelcontextprotocol/protocolVersion")
            rev = meta_rev or revision
            out["request_path"].append(bytes([STDIO_SELECTOR.get(rev, 0)]) + req)
            out["http_request"].append(b"\x00" + http_post(req, rev))
            out["http_request"].append(b"\x05" + http_post(req, rev, chunked=True))
            out["canonical_json"].append(req)
        out["request_path"].append(b"\x00" + b"\n".join(requests[:8]))
        out["line_framer"].append(b"\x40\x07" + b"\n".join(requests) + b"\n")
        out["line_framer"].append(b"\x08\x03" + b"\r\n".join(requests[:4]))
        out["canonical_json"].extend(responses[:20])
        out["canonical_json"].extend(ledger_lines[:10])
        out["ledger_record"].extend(ledger_lines)
        out["ledger_verify"].append(ledger)
        out["ledger_verify"].append(b"".join(line + b"\n" for line in ledger_lines[:5]))
        out["ledger_verify"].append(ledger[: len(ledger) // 2])
        for k in range(0, 8):
            out["torn_tail"].append(bytes([k, 0, 128]) + b'{"body":')
            out["torn_tail"].append(bytes([k, 1, 0]) + ledger_lines[-1][:40])
        for resp in responses:
            try:
                msg = json.loads(resp)
            except ValueError:
                continue
            sc = (msg.get("result") or {}).get("structuredContent") if isinstance(msg, dict) else None
            if isinstance(sc, dict):
                inner = sc.get("result", sc)
                if isinstance(inner, dict) and ("receiptHash" in inner or "pollToken" in inner):
                    handle = json.dumps(inner, separators=(",", ":")).encode()
                    out["run_handle"].append(handle)
                    # handle_ledger: structured fields first (zeros), then handle \0 ledger.
                    out["handle_ledger"].append(bytes(16) + handle + b"\0" + ledger)
                    out["handle_ledger"].append(bytes(16) + handle)
        # capsule: structured fields first, then ledger bytes (its last field).
        out["capsule"].append(bytes(16) + b"".join(line + b"\n" for line in ledger_lines[:6]))
        for req in requests:
            meta = _trace_meta(req)
            if meta is not None:
                out["request_meta"].append(bytes(24) + meta)
        del meta
    # Integer ids beyond 64 bits, which the server echoes digit for digit (found by the fuzzer
    # once the invariant read ids as parsed values, where such an id is a float).
    big = b"1" + b"8" * 60
    out["request_path"].append(b"\x04" + b'{"jsonrpc":"2.0","id":' + big + b',"method":"ping"}')
    out["request_path"].append(
        b"\x04" + b'{"jsonrpc":"2.0","id":-' + big
        + b',"method":"tools/call","params":{"name":"bernstein_nope","arguments":{}}}')
    # A few HTTP shapes besides POST /mcp.
    for raw in (
        b"GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n",
        b"POST /messages?stream=tok_1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: abc\r\n\r\n",
        b"GET /mcp HTTP/1.0\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    ):
        out["http_request"].append(b"\x00" + raw)
        out["http_request"].append(b"\x03" + raw)
    out["http_request"].append(b"\x00" + http_post(
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}', "2026-07-28",
        extra="Mcp-Method: tools/list\r\nAuthorization: Bearer s3cret-token\r\nOrigin: http://localhost\r\n"))
    project_file_seeds(out["project_files"])
    out["request_meta"].extend(bytes(24) + json.dumps(m, separators=(",", ":")).encode() for m in (
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
         "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,vendor@sys=a b",
         "baggage": "userId=alice, serverNode=DF%2028;p=1;flag"},
        {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-00"},
        {"region": "eu-west-1", "count": 42, "dry": False, "nested": {"tenant": "t1"}},
        {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}},
    ))
    return out


def _trace_meta(request: bytes) -> bytes | None:
    """The `_meta` of a recorded request, when it has one."""
    try:
        msg = json.loads(request)
    except ValueError:
        return None
    meta = (msg.get("params") or {}).get("_meta") if isinstance(msg, dict) else None
    return json.dumps(meta, separators=(",", ":")).encode() if isinstance(meta, dict) else None


def project_file_seeds(out: list[bytes]) -> None:
    """project_files: selector 0 + a scenario definition, 1 + a SKILL.md (the built-in
    scenarios, and a few skill files in the shapes `skills::parse_header` reads)."""
    for path in sorted((HERE.parent / "domain" / "src" / "scenarios").glob("*.json")):
        out.append(b"\x00" + path.read_bytes())
    for text in (
        "---\nname: ci-fixer\ndescription: \"Fixes CI\"\nreferences:\n  - references/a.md\n"
        "scripts:\n  - 'scripts/run.sh'\n---\n# CI fixer\n",
        "# Backend conventions\n\nUse the ledger.\n",
        "---\r\nname: x\r\ndescription:\r\n---\r\n\r\n## Heading\r\n",
        "ci-fixer|Fixes CI: the flaky ones|references/a.md,references/b.md|# Body\n",
    ):
        out.append(b"\x01" + text.encode())


def main() -> None:
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus"
    total = 0
    for target, items in seeds().items():
        d = dest / target
        d.mkdir(parents=True, exist_ok=True)
        for item in items:
            (d / hashlib.sha1(item).hexdigest()).write_bytes(item)
        total += len(items)
    print(f"wrote {total} seeds for {len(seeds())} targets under {dest}")


if __name__ == "__main__":
    main()
