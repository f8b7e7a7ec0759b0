"""The traps a newcomer met following the README from a fresh clone, on the real binary:

* every server (`mcp` over stdio and HTTP, `dashboard`, an in-process `worker`) names the store
  it serves on stderr: the `.sdd/` ledger file, or the database by host, port, name and user;
* a password in a store URL is never printed, by any command, whatever fails;
* every command that needs a project refuses a directory that is none (and a `.sdd/` without
  a ledger file) in the same words, never with a raw `os error`; the set of commands is read
  from the binary's help, so a new subcommand must be classified here;
* `--json` is accepted wherever a command prints data (`mcp tools --json-output` still works,
  hidden), and `task cancel` / `plan approve` speak to a person by default.

The PostgreSQL half of the store line is in tests/e2e/postgres/test_pg_store_named.py.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from harness.http_server import HttpServer, wait_announced
from harness.launch import base_env, binary_path, run_cli
from harness.operator import start_dashboard
from harness.payloads import outcome
from harness.raw import RawServer

TASK = "T-0123456789abcdef"
SECRET = "pw-N0T-T0-B3-PRINTED"
STORE_LINE = re.compile(r"bernstein: store: (.*)")


def file_store_line(workdir: Path) -> str:
    return f"bernstein: store: the ledger file {workdir.resolve()}/.sdd/ledger/ledger.jsonl"


def payload(resp: dict):
    return outcome(resp["result"]).payload


# -- the store line ----------------------------------------------------------------------------


def test_every_server_names_its_file_store(launcher, workdir, runtime, tmp_path):
    # stdio, piped (as an MCP host starts it): the line is said there too, once.
    first = subprocess.run([str(binary_path()), "mcp", "--workdir", str(workdir), "--runtime", runtime],
                           env=base_env(), input=b"", capture_output=True, timeout=60)
    err = first.stderr.decode()
    assert first.returncode == 0, err
    assert f"{file_store_line(workdir)}, empty (no --store URL or BERNSTEIN_STORE_URL given)" in err, err
    assert err.count("bernstein: store:") == 1, err

    with RawServer.start(launcher, "records") as srv:
        srv.initialize()
        payload(srv.call_tool("bernstein_run", {"goal": "counted in the store line"}))

    srv = HttpServer(launcher, "named-http", record=False)
    try:
        text = srv.stderr_text()
    finally:
        srv.stop()
    line = re.search(re.escape(file_store_line(workdir)) + r", (\d+) records \(", text)
    assert line and int(line.group(1)) > 0, text
    assert text.index("bernstein: store:") < text.index("serving MCP over HTTP"), text

    proc, _ = start_dashboard(binary_path(), workdir, runtime, tmp_path / "dash.log")
    proc.terminate()
    proc.wait(timeout=30)
    assert file_store_line(workdir) in (tmp_path / "dash.log").read_text(), (tmp_path / "dash.log").read_text()

    log = tmp_path / "worker.log"
    with open(log, "wb") as err_file:
        worker = subprocess.Popen([str(binary_path()), "worker", "--workdir", str(workdir), "--exec", "true",
                                   "--poll", "100ms"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=err_file, env=base_env())
        try:
            said = wait_announced(worker, log, STORE_LINE)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0
    assert f"bernstein: store: {said}".startswith(file_store_line(workdir)), said


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def store_commands(tmp_path: Path, project: Path) -> list[list[str]]:
    """Every command that reads a store URL (each with what it needs to get that far)."""
    (tmp_path / "r.json").write_text("{}")
    return [
        ["mcp"],
        ["mcp", "--migrate"],
        ["mcp", "--transport", "http", "--port", "0"],
        ["dashboard", "--port", "0"],
        ["worker", "--exec", "true"],
        ["status"],
        ["status", "--json"],
        ["plan", "list"],
        ["plan", "show", TASK],
        ["plan", "approve", TASK, "--hash", "sha256:0"],
        ["task", "cancel", TASK],
        ["store", "migrate"],
        ["audit", "verify"],
        ["mailbox", "verify"],
        ["backlog", "verify-claim", "--receipt", str(tmp_path / "r.json")],
        ["ledger", "export", "--out", str(tmp_path / "out")],
        ["ledger", "import", "--from", str(project)],
    ]


def test_a_password_in_the_store_url_is_never_printed(tmp_path):
    project = tmp_path / "proj"
    assert run_cli(["init", str(project)]).returncode == 0
    port = closed_port()
    refused = f"postgres://alice:{SECRET}@127.0.0.1:{port}/ledgerdb"
    unparsable = f"postgres://alice:{SECRET}@127.0.0.1:notaport/ledgerdb"
    named = f"PostgreSQL database ledgerdb at 127.0.0.1:{port} as user alice"
    for url in (refused, unparsable):
        for args in store_commands(tmp_path, project):
            for how, env in ((["--store", url], None), ([], {"BERNSTEIN_STORE_URL": url})):
                proc = subprocess.run([str(binary_path()), *args, *how, "--workdir", str(project)],
                                      env=base_env(env), input="", capture_output=True, text=True, timeout=60,
                                      cwd=tmp_path)
                said = proc.stdout + proc.stderr
                assert SECRET not in said, (args, how, said)
                assert proc.returncode != 0, (args, how, said)
                if url == refused and args[0] in ("mcp", "dashboard", "worker", "status", "plan", "task", "store"):
                    # The failure names the database it could not reach (never its password).
                    assert named in proc.stderr, (args, how, proc.stderr)


# -- a directory that is no project --------------------------------------------------------------


def subcommands(path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the binary, from its help. A command with subcommands is one
    itself when a usage line runs it without one (`bernstein mcp [OPTIONS]`)."""
    text = run_cli([*path, "--help"]).stdout
    if "Commands:" not in text:
        return [path]
    usage = text.split("Usage:", 1)[1].split("\n\n", 1)[0].splitlines()
    found = [path] if path and any("<COMMAND>" not in u for u in usage) else []
    section = text.split("Commands:", 1)[1].split("\n\n", 1)[0]
    for line in section.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name and name != "help":
            found += subcommands((*path, name))
    return found


# What each command that needs a project gets to reach its project check.
NEEDS_PROJECT = {
    ("status",): [],
    ("plan", "list"): [],
    ("plan", "show"): [TASK],
    ("plan", "approve"): [TASK, "--hash", "sha256:0"],
    ("plan", "reject"): [TASK, "--hash", "sha256:0"],
    ("task", "cancel"): [TASK],
    ("audit", "verify"): [],
    ("audit", "verify-handle"): ["saved.json"],
    ("backlog", "verify-claim"): ["--receipt", "saved.json"],
    ("capsule", "verify"): ["saved.json"],
    ("mailbox", "verify"): [],
    ("ledger", "upgrade"): [],
    ("worker",): ["--exec", "true"],
    ("dashboard",): ["--port", "0"],
    ("run",): ["a goal"],
}
# The commands that do not: why.
NO_PROJECT = {
    ("init",): "creates the project",
    ("mcp",): "creates .sdd/ in an existing directory on first use (and names the store it serves)",
    ("mcp", "tools"): "reads no project",
    ("store", "migrate"): "a database only",
    ("ledger", "export"): "a database; the workdir only lends its keys, when it has them",
    ("ledger", "import"): "a database first (--store), then the workdir's audit key",
}
# Commands whose refusal is still pending elsewhere (an xfail each); none today.
PENDING: dict = {}


def project_case(path):
    marks = [pytest.mark.xfail(strict=True, reason=PENDING[path])] if path in PENDING else []
    return pytest.param(path, marks=marks, id=" ".join(path))


def test_every_command_is_classified():
    found = set(subcommands())
    known = set(NEEDS_PROJECT) | set(NO_PROJECT)
    assert found == known, f"unclassified: {sorted(found - known)}; gone: {sorted(known - found)}"


def run_in(tmp_path: Path, path, workdir: Path) -> subprocess.CompletedProcess:
    (tmp_path / "saved.json").write_text("{}")
    return run_cli([*path, *NEEDS_PROJECT[path], "--workdir", str(workdir)], cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("path", [project_case(p) for p in NEEDS_PROJECT])
def test_a_directory_without_sdd_is_refused_in_the_same_words(tmp_path, path):
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = run_in(tmp_path, path, plain)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"bernstein: {plain} is not a Bernstein project (no .sdd/): pass the --workdir of one" in proc.stderr, proc.stderr
    assert f"or create it with `bernstein init {plain}`" in proc.stderr, proc.stderr
    assert "os error" not in proc.stderr and proc.stdout == "", proc.stdout + proc.stderr
    assert list(plain.iterdir()) == [], "the refusal created something"


@pytest.mark.parametrize("path", [project_case(p) for p in NEEDS_PROJECT])
def test_a_project_without_its_ledger_file_is_refused_in_the_same_words(tmp_path, path):
    # What a PostgreSQL instance's workdir is: the keys, no ledger file.
    keys_only = tmp_path / "instance"
    assert run_cli(["init", str(keys_only)]).returncode == 0
    for f in (keys_only / ".sdd" / "ledger").iterdir():
        f.unlink()
    (keys_only / ".sdd" / "ledger").rmdir()
    proc = run_in(tmp_path, path, keys_only)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    ledger = keys_only / ".sdd" / "ledger" / "ledger.jsonl"
    assert f"bernstein: {ledger} does not exist" in proc.stderr, proc.stderr
    assert "--store URL" in proc.stderr or "bernstein ledger export" in proc.stderr, proc.stderr
    assert "os error" not in proc.stderr, proc.stderr
    assert not (keys_only / ".sdd" / "ledger").exists(), "the refusal created the ledger"


# -- --json and human output -----------------------------------------------------------------------


def test_json_wherever_data_is_printed_and_words_otherwise(launcher, workdir):
    with RawServer.start(launcher, "data") as srv:
        srv.initialize()
        plan = payload(srv.call_tool("bernstein_run", {"goal": "a planned change", "plan": True}))
        work = payload(srv.call_tool("bernstein_run", {"goal": "plain work"}))
        receipt = payload(srv.call_tool("bernstein_claim", {"claimer_id": "json-test"}))
        capsule = srv.call_tool("bernstein_task_capsule", {"task_id": work["task_id"]})["result"]
        handle = payload(srv.call_tool("bernstein_run_status", {"run_id": work["run_id"]}))
    assert receipt["taskId"] == work["task_id"], receipt
    (workdir / "handle.json").write_text(json.dumps(handle))
    (workdir / "receipt.json").write_text(json.dumps(receipt))
    (workdir / "capsule.json").write_text(json.dumps(capsule))
    wd = ["--workdir", str(workdir)]
    shown = run_cli(["plan", "show", plan["plan_id"], "--json", *wd])
    plan_hash = json.loads(shown.stdout)["hash"]

    def data(*args: str, code: int = 0):
        proc = run_cli([*args, *wd])
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return json.loads(proc.stdout)

    assert data("status", "--json")["tasks"]
    assert data("plan", "list", "--json")["plans"]
    assert data("mcp", "tools", "--json")[0]["tools"]
    assert data("mcp", "tools", "--json-output")[0]["tools"], "the old spelling still works"
    assert data("mailbox", "verify", "--json")["ok"] is True
    assert data("backlog", "verify-claim", "--receipt", str(workdir / "receipt.json"), "--json")["granted"] is True
    assert data("capsule", "verify", str(workdir / "capsule.json"), "--json")["valid"] is True
    approved = data("plan", "approve", plan["plan_id"], "--hash", plan_hash, "--json")
    assert approved["decision"] == "approve" and approved["changes"], approved
    cancelled = data("task", "cancel", work["task_id"], "--json")
    assert cancelled["status"] == "cancelled" and cancelled["previous_status"] == "claimed", cancelled
    assert data("task", "cancel", TASK, "--json", code=1)["error"] == "unknown_task"
    assert data("audit", "verify", "--json")["ok"] is True
    assert data("audit", "verify-handle", str(workdir / "handle.json"), "--json")["ok"] is True
    assert data("ledger", "upgrade", "--json") == {"ok": True, "upgraded": False}
    assert data("init", str(workdir), "--json") == {"sdd": str(workdir / ".sdd"), "created": False}
    help_text = run_cli(["mcp", "tools", "--help"]).stdout
    assert "--json" in help_text and "--json-output" not in help_text, help_text


def test_cancel_and_plan_decisions_speak_to_a_person_by_default(launcher, workdir):
    with RawServer.start(launcher, "words") as srv:
        srv.initialize()
        plan = payload(srv.call_tool("bernstein_run", {"goal": "a planned change", "plan": True}))
        payload(srv.call_tool("bernstein_run", {"goal": "step", "parent_task_id": plan["task_id"]}))
        work = payload(srv.call_tool("bernstein_run", {"goal": "plain work"}))
    wd = ["--workdir", str(workdir)]
    plan_hash = json.loads(run_cli(["plan", "show", plan["plan_id"], "--json", *wd]).stdout)["hash"]
    approved = run_cli(["plan", "approve", plan["plan_id"], "--hash", plan_hash, *wd])
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(f"approved plan {plan['plan_id']}: 2 tasks changed\n"), approved.stdout
    assert f"  {plan['task_id']}  planned -> open" in approved.stdout, approved.stdout

    done = run_cli(["task", "cancel", plan["task_id"], "--reason", "words", *wd])
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"cancelled task {plan['task_id']} (was waiting_for_subtasks) and 1 of its subtasks: "
                           "2 tasks changed; "
                           f"run {plan['run_id']} cancelled\n"), done.stdout
    again = run_cli(["task", "cancel", plan["task_id"], *wd])
    assert again.returncode == 0 and again.stdout == f"task {plan['task_id']} was already cancelled: nothing changed\n"
    leaf = run_cli(["task", "cancel", work["task_id"], *wd])
    assert leaf.stdout.startswith(f"cancelled task {work['task_id']} (was open): 1 task changed"), leaf.stdout
    refused = run_cli(["task", "cancel", TASK, *wd])
    assert refused.returncode == 1 and refused.stdout == "", refused.stdout
    assert refused.stderr.startswith(f"bernstein: task_id {TASK} names no task"), refused.stderr
    assert "{" not in refused.stderr, "a person gets words, not JSON"
