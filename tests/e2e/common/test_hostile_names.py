"""Client-chosen tool names that are no tool, and hard links into `.sdd/`, against the real
binary on both runtimes (docs/SECURITY.md, docs/RECORDS.md `mcp.stateless_call`).

A name that is not a tool is recorded as the marker `unknown` with the name's digest and
length, tallied under that marker, and quoted in the error only as a short redacted prefix: a
200 KB name costs the ledger and `/api/overview` a few hundred bytes, and a secret in a name
reaches neither. A file with several names one of which is under `.sdd/` is never served.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness import ledger
from harness.http_raw import call_tool, request
from harness.payloads import refusal
from harness.raw import RawServer

SECRET = "ghp_" + "Zq8v" * 9
SECRET_NAME = f"load_skill\nAuthorization: Bearer {SECRET}"
LONG_NAME = "x" * 200_000


def ledger_bytes(sdd: Path) -> int:
    return (sdd / "ledger" / "ledger.jsonl").stat().st_size


def test_names_that_are_no_tool_are_recorded_as_a_marker(http_server, workdir):
    srv = http_server("names")
    base = srv.direct_base
    sdd = workdir / ".sdd"
    call_tool(base, "bernstein_status", {}, id_=1)
    before = ledger_bytes(sdd)
    overview_before = len(request(base, "GET", "/api/overview?window=86400").body)
    replies = []
    for i, name in enumerate([LONG_NAME, SECRET_NAME] * 20):
        replies.append(call_tool(base, name, {"password": f"hunter2-{SECRET}"}, id_=10 + i))
    grown = ledger_bytes(sdd) - before
    # 40 audit records of a few hundred bytes each, not 40 names.
    assert grown < 40 * 1_000, grown
    text = (sdd / "ledger" / "ledger.jsonl").read_text()
    assert SECRET not in text and "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" not in text
    for reply in replies[:2]:
        error = reply.json()["error"]
        assert error["code"] == -32602
        assert SECRET not in json.dumps(error)
        assert len(error["message"]) < 120, error["message"]
    assert "(a name of 200000 bytes)" in replies[0].json()["error"]["message"]
    records = [json.loads(line.raw) for line in ledger.ledger_lines(sdd)]
    unknown = [r["body"] for r in records if r.get("kind") == "mcp.stateless_call"
               and r["body"]["tool"] == "unknown"]
    assert len(unknown) == 40
    assert unknown[0]["name_len"] == len(LONG_NAME.encode())
    assert unknown[0]["name_digest"] == "sha256:" + hashlib.sha256(LONG_NAME.encode()).hexdigest()
    assert unknown[1]["name_len"] == len(SECRET_NAME.encode())
    assert all(b["error"] == "unknown_tool" and not b["ok"] for b in unknown)
    overview = request(base, "GET", "/api/overview?window=86400")
    assert overview.status == 200
    # The day's per-minute series is the bulk; the names add one key.
    assert len(overview.body) - overview_before < 200, (overview_before, len(overview.body))
    assert SECRET not in overview.body.decode()
    calls = overview.json()["calls"]
    assert calls["by_tool"]["unknown"] == 40
    assert set(calls["by_tool"]) == {"unknown", "bernstein_status"}
    metrics = request(base, "GET", "/metrics").body.decode()
    assert SECRET not in metrics and "xxxxxxxxxxxxxxxx" not in metrics
    verified = ledger.audit_verify(sdd)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_hard_link_into_sdd_is_not_served(launcher, workdir: Path):
    skill = workdir / "templates" / "skills" / "good"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: good\nreferences:\n  - notes.md\n---\n# Good\n")
    with RawServer.start(launcher, "hard-link") as srv:
        hard_link_is_refused(srv, workdir, skill)


def hard_link_is_refused(srv: RawServer, workdir: Path, skill: Path) -> None:
    srv.initialize()
    srv.call_tool("bernstein_run", {"goal": "write the ledger"})
    sdd_file = workdir / ".sdd" / "ledger" / "ledger.jsonl"
    os.link(sdd_file, skill / "references" / "notes.md")
    resp = srv.call_tool("load_skill", {"name": "good", "reference": "notes.md"})
    body = json.dumps(resp)
    assert "write the ledger" not in body and "stateless_call" not in body
    refused = refusal(resp["result"])
    assert refused["error"] == "private_path", refused
    # A reference with two names, neither under `.sdd/`, is served.
    (workdir / "shared.md").write_text("Shared notes.")
    (skill / "references" / "notes.md").unlink()
    os.link(workdir / "shared.md", skill / "references" / "notes.md")
    ok = srv.call_tool("load_skill", {"name": "good", "reference": "notes.md"})
    assert "Shared notes." in json.dumps(ok)
