"""The first run, as a newcomer meets it (issue 13): a mistyped `--workdir` is refused by every
command instead of becoming an empty project with fresh keys; `bernstein init DIR` is the one
command that creates; read commands on a directory without `.sdd/` create nothing; the exit
codes of the verifiers on a missing ledger; the messages of a busy port and of a stdio server
started by hand; the help texts.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
from pathlib import Path

import pytest

from harness.launch import base_env, binary_path, run_cli
from harness.raw import RawServer

TASK = "T-0123456789abcdef"

# Every command that works in a project (each with the arguments it needs to get that far).
PROJECT_COMMANDS = [
    ["status"],
    ["plan", "list"],
    ["plan", "show", TASK],
    ["task", "cancel", TASK],
    ["audit", "verify"],
    ["mailbox", "verify"],
    ["backlog", "verify-claim", "--receipt", "receipt.json"],
    ["ledger", "upgrade"],
    ["worker", "--exec", "true"],
]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("args", PROJECT_COMMANDS + [["mcp"], ["mcp", "--transport", "http", "--port", "0"]],
                         ids=lambda a: " ".join(a[:2]))
def test_a_missing_workdir_is_refused_and_not_created(tmp_path, args):
    typo = tmp_path / "projcet"
    proc = subprocess.run(
        [str(binary_path()), *args, "--workdir", str(typo)],
        env=base_env(), input="", capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"bernstein init {typo}" in proc.stderr and "no such directory" in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert not typo.exists(), "the mistyped workdir was created"


def test_init_creates_the_directory_and_both_keys_and_says_when_it_existed(tmp_path):
    proj = tmp_path / "new" / "project"
    first = run_cli(["init", str(proj)])
    assert first.returncode == 0, first.stderr
    assert "initialised" in first.stdout and "already" not in first.stdout, first.stdout
    keys = proj / ".sdd" / "keys"
    assert (keys / "audit.key").is_file() and (keys / "signing.ed25519").is_file(), tree(proj)
    before = {p: p.read_bytes() for p in keys.iterdir()}
    again = run_cli(["--workdir", str(proj), "init"])
    assert again.returncode == 0, again.stderr
    assert "already existed" in again.stdout, again.stdout
    assert {p: p.read_bytes() for p in keys.iterdir()} == before, "init replaced a key"
    # The new project is one every command accepts.
    status = run_cli(["status", "--workdir", str(proj), "--json"])
    assert status.returncode == 0, status.stderr
    verify = run_cli(["audit", "verify", "--workdir", str(proj)])
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize("args", PROJECT_COMMANDS[:7], ids=lambda a: " ".join(a[:2]))
def test_read_commands_on_a_directory_without_sdd_create_nothing(tmp_path, args):
    plain = tmp_path / "plain"
    plain.mkdir()
    (tmp_path / "receipt.json").write_text("{}")
    proc = run_cli([*args, "--workdir", str(plain)], cwd=tmp_path)
    # The project is checked first, so every one of them says it is none (exit 2).
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert tree(plain) == [], f"{args} created {tree(plain)}"


def test_mcp_still_creates_sdd_in_an_existing_workdir(launcher, workdir):
    with RawServer.start(launcher, "first-use") as srv:
        srv.initialize()
    assert (workdir / ".sdd" / "keys" / "audit.key").is_file()


def test_verifiers_exit_2_on_a_missing_ledger(tmp_path):
    proj = tmp_path / "proj"
    assert run_cli(["init", str(proj)]).returncode == 0
    (proj / ".sdd" / "ledger" / "ledger.jsonl").unlink()
    for args in (["audit", "verify"], ["mailbox", "verify"]):
        proc = run_cli([*args, "--workdir", str(proj)])
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "ledger.jsonl" in proc.stderr and "FAILED" not in proc.stdout, (args, proc.stdout, proc.stderr)


def test_a_busy_port_names_the_address_and_suggests_port(workdir, runtime):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run_cli(["mcp", "--workdir", str(workdir), "--transport", "http", "--runtime", runtime,
                        "--port", str(port)])
    assert proc.returncode == 2, proc.stderr
    assert f"127.0.0.1:{port}" in proc.stderr and "already in use" in proc.stderr, proc.stderr
    assert "--port" in proc.stderr, proc.stderr


def stdio_stderr(workdir: Path, runtime: str, *, tty: bool) -> str:
    """What `bernstein mcp` (stdio, empty input) writes to stderr, a terminal or a pipe."""
    argv = [str(binary_path()), "mcp", "--workdir", str(workdir), "--runtime", runtime]
    if not tty:
        proc = subprocess.run(argv, env=base_env(), input=b"", capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr.decode()
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(argv, env=base_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        out, _ = proc.communicate(b"", timeout=60)
        assert proc.returncode == 0 and out == b""
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child's end is closed and everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    finally:
        os.close(master)


def test_stdio_says_it_is_serving_only_on_a_terminal(workdir, runtime):
    on_tty = stdio_stderr(workdir, runtime, tty=True)
    assert "serving MCP on stdin/stdout" in on_tty and "Ctrl-D" in on_tty and "Ctrl-C" in on_tty, on_tty
    piped = stdio_stderr(workdir, runtime, tty=False)
    assert "serving MCP" not in piped, piped


def test_task_cancel_prints_its_refusal_once(tmp_path):
    proj = tmp_path / "proj"
    assert run_cli(["init", str(proj)]).returncode == 0
    proc = run_cli(["task", "cancel", TASK, "--workdir", str(proj), "--json"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    refusal = json.loads(proc.stdout)
    assert (proc.stdout + proc.stderr).count(refusal["message"]) == 1, proc.stdout + proc.stderr
    # Without --json it is said once to a person, on stderr.
    words = run_cli(["task", "cancel", TASK, "--workdir", str(proj)])
    assert words.returncode == 1 and words.stdout == "", words.stdout + words.stderr
    assert words.stderr.count(refusal["message"]) == 1, words.stderr


def test_help_lists_tiers_and_describes_plan_ids():
    for args, flag in ((["mcp", "--help"], "--mcp-tier"), (["mcp", "tools", "--help"], "--tier")):
        text = run_cli(args).stdout
        assert flag in text and "core, standard, all" in text, text
    for verb in ("approve", "reject"):
        text = run_cli(["plan", verb, "--help"]).stdout
        line = next(ln for ln in text.splitlines() if ln.strip().startswith("<PLAN_ID>"))
        assert "plan id" in line.lower(), text
    assert "core, standard, all" in run_cli(["mcp", "--mcp-tier", "gold"]).stderr
