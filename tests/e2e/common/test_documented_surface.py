"""The documented surface, to the letter, through the real binary over raw stdio: the pinned
`specRevision` of handles and claim receipts in every era, the capability card's shape, an
`initialize` without `protocolVersion`, the approval refusal's hint, a traceparent kept whole
as the lineage entry's `step_id`, the completion gate's dependency check, and `backlog
verify-claim` with the documented `--backlog`/`--audit-dir` flags (exit 0 ok, 1 invalid,
2 I/O or usage).
"""

from __future__ import annotations

import json

from harness.launch import run_cli
from harness.payloads import outcome
from harness.raw import RawServer

PINNED = "2026-07-28"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def payload(resp: dict):
    """The bare payload of a raw tools/call response (meter envelope unwrapped)."""
    return outcome(resp["result"]).payload


def refused(resp: dict) -> dict:
    o = outcome(resp["result"])
    assert o.is_error, o.text[:400]
    return o.payload


def test_handles_and_receipts_carry_the_pinned_revision_in_every_era(launcher):
    with RawServer.start(launcher, "pinned-old") as srv:
        srv.initialize("2025-06-18")
        run = payload(srv.call_tool("bernstein_run", {"goal": "pinned work"}))
        old = srv.call_tool("bernstein_run_status", {"run_id": run["run_id"]})
        handle_old = payload(old)
    with RawServer.start(launcher, "pinned-modern") as srv:
        modern = srv.call_tool("bernstein_run_status", {"run_id": run["run_id"]}, modern=True)
        handle_modern = payload(modern)
        receipt = payload(srv.call_tool("bernstein_claim", {"claimer_id": "w1"}, modern=True))
    assert handle_old["specRevision"] == PINNED, handle_old
    # The run did not move between the polls: the same handle bytes in both eras.
    assert json.dumps(handle_old, sort_keys=True) == json.dumps(handle_modern, sort_keys=True)
    assert receipt["granted"] is True and receipt["specRevision"] == PINNED, receipt


def test_the_capability_card_lists_the_prompt_catalogue_and_only_accepted_auth_modes(launcher):
    with RawServer.start(launcher, "card") as srv:
        srv.initialize()
        read = srv.request("resources/read", {"uri": "bernstein://capability"})
        card = json.loads(read["result"]["contents"][0]["text"])
        prompts = srv.request("prompts/list")["result"]["prompts"]
    assert [p["name"] for p in card["prompts"]["catalogue"]] == [p["name"] for p in prompts], card
    assert card["auth"]["modes"] == ["none"], card["auth"]
    assert card["auth"]["oauth"] == {"discovery": False}, card["auth"]


def test_initialize_without_protocol_version_answers_the_newest_handshake_revision(launcher):
    with RawServer.start(launcher, "init-bare") as srv:
        resp = srv.request("initialize", {"capabilities": {}, "clientInfo": {"name": "bare", "version": "0"}})
        assert "error" not in resp, resp
        assert resp["result"]["protocolVersion"] == "2025-11-25", resp
        assert resp["result"]["capabilityCard"]["name"], resp
        srv.notify("notifications/initialized")
        assert srv.request("ping")["result"] == {}


def test_the_approval_refusal_says_how_the_work_ends(launcher):
    with RawServer.start(launcher, "approve-open") as srv:
        srv.initialize()
        task = payload(srv.call_tool("bernstein_run", {"goal": "not finished"}))["task_id"]
        e = refused(srv.call_tool("bernstein_approve", {"task_id": task}))
    assert e["error"] == "task_not_awaiting_approval", e
    assert e["completable_statuses"] == ["claimed", "in_progress", "open"], e
    for words in ("bernstein_complete", "bernstein_post_message", f"bernstein task cancel {task}"):
        assert words in e["hint"], e["hint"]


def test_the_traceparent_is_kept_whole_as_the_lineage_step_id(launcher):
    with RawServer.start(launcher, "trace", tier="all") as srv:
        srv.initialize()
        task = payload(srv.call_tool("bernstein_run", {"goal": "report"}))["task_id"]
        args = {"task_id": task, "key": "docs/r.md", "kind": "report", "content": "# r"}
        posted = srv.request(
            "tools/call",
            {"name": "bernstein_post_artifact", "arguments": args, "_meta": {"traceparent": TRACEPARENT}},
        )
        assert payload(posted)["trace"]["traceparent"] == TRACEPARENT
        # A malformed traceparent (upper-case hex) is ignored, not an error.
        bad = TRACEPARENT.upper()
        again = srv.request(
            "tools/call",
            {"name": "bernstein_post_artifact", "arguments": {**args, "content": "# r2"}, "_meta": {"traceparent": bad}},
        )
        assert "trace" not in payload(again)
        report = payload(srv.call_tool("bernstein_verify_lineage", {"artefact_path": "docs/r.md"}))
    assert report["valid"] is True, report
    assert [v.get("step_id") for v in report["versions"]] == [TRACEPARENT, None], report


def test_completing_an_open_task_honours_its_dependencies(launcher):
    with RawServer.start(launcher, "deps") as srv:
        srv.initialize()
        root = payload(srv.call_tool("bernstein_run", {"goal": "root"}))["task_id"]
        first = payload(srv.call_tool("bernstein_run", {"goal": "first", "parent_task_id": root}))
        gated = payload(srv.call_tool(
            "bernstein_run", {"goal": "after first", "parent_task_id": root, "depends_on": [first["task_id"]]}
        ))
        e = refused(srv.call_tool("bernstein_complete", {"task_id": gated["task_id"], "result_summary": "early"}))
        assert e["error"] == "dependencies_not_done", e
        assert e["unmet_dependencies"] == [{"task_id": first["task_id"], "status": "open"}], e
        status = payload(srv.call_tool("bernstein_run_status", {"run_id": gated["task_id"]}))
        assert status["status"] == "working", status
        payload(srv.call_tool("bernstein_complete", {"task_id": first["task_id"], "result_summary": "done"}))
        done = payload(srv.call_tool("bernstein_complete", {"task_id": gated["task_id"], "result_summary": "now"}))
        assert done["previous_status"] == "open" and done["status"] == "done", done


def verify_claim(cwd, *args):
    return run_cli(["backlog", "verify-claim", *args], cwd=cwd)


def test_verify_claim_accepts_the_documented_flags_and_the_dir_form(launcher, workdir, tmp_path):
    with RawServer.start(launcher, "claim") as srv:
        srv.initialize()
        payload(srv.call_tool("bernstein_run", {"goal": "claim me"}))
        resp = srv.call_tool("bernstein_claim", {"claimer_id": "w1"})
    receipt = payload(resp)
    assert receipt["granted"] is True
    good = tmp_path / "receipt.json"
    good.write_text(json.dumps(receipt))
    documented = ["--backlog", ".sdd/runtime/task-backlog.json", "--audit-dir", ".sdd/audit"]
    for flags in (documented, documented[:2], documented[2:], ["--dir", ".sdd"], ["--dir", "."], []):
        proc = verify_claim(workdir, "--receipt", str(good), *flags)
        assert proc.returncode == 0, (flags, proc.stdout, proc.stderr)
        assert proc.stdout.startswith("OK:"), proc.stdout

    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**receipt, "claimerId": "w2"}))
    proc = verify_claim(workdir, "--receipt", str(tampered), *documented)
    assert proc.returncode == 1 and "receipt hash check failed" in proc.stdout, proc.stdout
    junk = tmp_path / "junk.json"
    junk.write_text("not a receipt")
    proc = verify_claim(workdir, "--receipt", str(junk), *documented)
    assert proc.returncode == 1 and "receipt shape" in proc.stdout, proc.stdout

    # I/O and usage: exit 2, saying what is wrong.
    proc = verify_claim(workdir, "--receipt", str(tmp_path / "missing.json"), *documented)
    assert proc.returncode == 2 and "missing.json" in proc.stderr, proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    for flags in (documented, documented[:2], documented[2:]):
        proc = verify_claim(empty, "--receipt", str(good), *flags)
        named = any(p in proc.stderr for p in flags[1::2])
        assert proc.returncode == 2 and named and "bernstein init" in proc.stderr, proc.stderr
    proc = verify_claim(workdir, "--receipt", str(good), "--dir", str(empty), "--audit-dir", ".sdd/audit")
    assert proc.returncode == 2 and "one project" in proc.stderr, proc.stderr
    proc = verify_claim(workdir, "--receipt", str(good), "--backlog")
    assert proc.returncode == 2, proc.stderr
