"""Secrets never reach the ledger: every documented DLP example (docs/RECORDS.md §7) is posted
through `bernstein_run` goal, `bernstein_post_message` body, `bernstein_complete`
result_summary and `bernstein_cancel` reason on the real binary; then no file under `.sdd/`
holds any secret byte sequence (raw or JSON-escaped), and every answer says what it redacted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.payloads import ok_payload
from harness.raw import RawServer

RECORDS_MD = Path(__file__).resolve().parents[3] / "docs" / "RECORDS.md"


def documented_examples() -> list[tuple[str, str, str]]:
    """(kind, example, recorded as) rows of the examples table of RECORDS.md §7."""
    doc = RECORDS_MD.read_text(encoding="utf-8")
    section = doc[doc.index("## 7. DLP") : doc.index("\n## 8.")]
    header = "| kind | example | recorded as |"
    rows = []
    for line in section[section.index(header) :].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("`").replace("\\n", "\n") for c in line.strip("|").split(" | ")]
        rows.append((cells[0], cells[1], cells[2]))
    return rows


def secret_of(example: str, recorded: str) -> str:
    at = recorded.index("[REDACTED:")
    tail = recorded[recorded.index("]", at) + 1 :]
    return example[at : len(example) - len(tail)]


EXAMPLES = documented_examples()


def fragments(secret: str) -> set[bytes]:
    """The secret raw and JSON-escaped, and each 12-byte window of those holding `EXAMPLE`
    (no byte the server generates spells it)."""
    forms = {secret.encode(), json.dumps(secret)[1:-1].encode()}
    out = set(forms)
    for f in forms:
        for i in range(max(1, len(f) - 11)):
            w = f[i : i + 12]
            if b"EXAMPLE" in w or b"EXAMPL" in w or b"XAMPLE" in w:
                out.add(w)
    return out


def sdd_bytes(workdir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(workdir)): p.read_bytes() for p in (workdir / ".sdd").rglob("*") if p.is_file()}


def counted(answer: dict, key: str | None, kind: str) -> bool:
    r = answer.get("redactions")
    n = r.get(key, 0) if isinstance(r, dict) else (r or 0)
    return n >= 1 and kind in answer.get("redacted_kinds", [])


def test_examples_table_is_complete():
    kinds = {k for k, _, _ in EXAMPLES}
    assert len(EXAMPLES) >= 25
    for kind in ("jwt", "openai_key", "anthropic_key", "google_api_key", "stripe_key", "bearer_token",
                 "private_key", "secret_assignment", "github_token", "slack_token", "aws_access_key"):
        assert kind in kinds


@pytest.mark.parametrize(("kind", "example", "recorded"), EXAMPLES, ids=[f"{i}-{e[0]}" for i, e in enumerate(EXAMPLES)])
def test_no_secret_reaches_the_ledger(launcher, workdir, kind, example, recorded):
    secret = secret_of(example, recorded)
    text = f"first line\n{example}\nlast line"
    answers = {}
    with RawServer.start(launcher, f"dlp-{kind}") as srv:
        srv.initialize()
        run = ok_payload(srv.call_tool("bernstein_run", {"goal": text})["result"])
        answers["bernstein_run goal"] = (run, "goal")
        task = run["task_id"]
        claim = ok_payload(srv.call_tool("bernstein_claim", {"claimer_id": "w"})["result"])
        assert claim["taskId"] == task
        msg = ok_payload(srv.call_tool(
            "bernstein_post_message", {"task_id": task, "kind": "finding", "body": text, "sender": "w"}
        )["result"])
        answers["bernstein_post_message body"] = (msg, None)
        done = ok_payload(srv.call_tool(
            "bernstein_complete", {"task_id": task, "result_summary": text, "claimer_id": "w"}
        )["result"])
        answers["bernstein_complete result_summary"] = (done, "result_summary")
        other = ok_payload(srv.call_tool("bernstein_run", {"goal": "to be cancelled"})["result"])
        cancel = ok_payload(srv.call_tool(
            "bernstein_cancel", {"task_id": other["task_id"], "reason": text}
        )["result"])
        answers["bernstein_cancel reason"] = (cancel, "reason")
        code, _ = srv.close()
        assert code == 0
    files = sdd_bytes(workdir)
    assert any(name.endswith("ledger.jsonl") for name in files), sorted(files)
    placeholder = f"[REDACTED:{kind}]".encode()
    ledger = b"".join(v for k, v in files.items() if k.endswith("ledger.jsonl"))
    for name, content in files.items():
        for frag in fragments(secret):
            assert frag not in content, f"{name} holds {frag!r} of the {kind} secret"
    # Root goal, mailbox body, summary (twice), cancel reason (three records).
    assert ledger.count(placeholder) >= 5, ledger.decode(errors="replace")[-3000:]
    for field, (answer, key) in answers.items():
        assert counted(answer, key, kind), f"{field}: the answer does not report the redaction: {answer}"
        for frag in fragments(secret):
            assert frag.decode(errors="ignore") not in json.dumps(answer), f"{field}: the answer echoes {frag!r}"
    # The task records say what they lost, per field.
    records = [json.loads(line) for line in ledger.splitlines() if line.strip()]
    bodies = [r.get("body", r) for r in records]
    created = [b for b in bodies if isinstance(b, dict) and b.get("goal", "").startswith("first line")]
    assert created and all(b["redactions"]["goal"] >= 1 and kind in b["redacted_kinds"] for b in created)
    assert re.search(rb'"redactions":\{"reason":1\}', ledger), "the cancel reason's count is recorded"
