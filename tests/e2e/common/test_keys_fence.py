"""The project's keys are out of reach of every tool, and every message has one reading, through
the real binary on every runtime:

* symlinks under `templates/skills/` to a key file, to `.sdd/keys`, to `.sdd`, or out of the
  project: the index skips them (or lists a skill whose SKILL.md is such a link with a problem,
  never its text), and a call by name is refused; no answer carries a key's bytes;
* `bernstein_verify_lineage` with `check_file` hashes only the file of a recorded artifact at a
  visible path inside the project: `.sdd/keys/audit.key`, `.env`, an unrecorded path and
  symlinks into `.sdd` or out of the project are refused;
* a `.sdd/keys` open to group or others is refused at start with the `chmod 700` fix, and
  `bernstein init` creates it 0700;
* a duplicate JSON key anywhere in a message is a -32700 parse error that runs nothing.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from harness.launch import base_env, run_cli
from harness.ledger import ledger_lines
from harness.payloads import ok_payload, refusal
from harness.raw import RawServer


def key_texts(workdir: Path) -> list[str]:
    keys = workdir / ".sdd" / "keys"
    texts = [(keys / n).read_text().strip() for n in ("audit.key", "signing.ed25519")]
    assert all(len(t) == 64 for t in texts)
    return texts


def assert_no_key_in(srv: RawServer, workdir: Path) -> None:
    wire = "\n".join(json.dumps(m) for m in srv.received)
    for text in key_texts(workdir):
        assert text not in wire, "a key's bytes reached a client"


def started(launcher, label: str, **kw) -> RawServer:
    srv = RawServer.start(launcher, label, **kw)
    srv.initialize("2025-06-18")
    # Any tool call makes sure both keys exist before the links are laid.
    srv.call_tool("bernstein_status", {})
    srv.request("tools/list")
    return srv


def test_load_skill_never_serves_sdd_or_what_lies_outside_the_skills_folder(launcher, workdir, tmp_path):
    skills = workdir / "templates" / "skills"
    (skills / "good" / "references").mkdir(parents=True)
    (skills / "good" / "SKILL.md").write_text("# Good\n")
    (skills / "good" / "references" / "fine.md").write_text("fine")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("# outside secret\n")
    with started(launcher, "skills-fence") as srv:
        keys = workdir / ".sdd" / "keys"
        os.symlink(keys / "signing.ed25519", skills / "keyfile")
        os.symlink(keys, skills / "keysdir")
        os.symlink("../../.sdd", skills / "sdd")
        os.symlink(outside, skills / "escape")
        os.symlink("../../README.md", skills / "readme")
        (workdir / "README.md").write_text("# not a skill\n")
        # A real folder whose SKILL.md is a key: listed, never read.
        (skills / "stolen").mkdir()
        os.symlink(keys / "signing.ed25519", skills / "stolen" / "SKILL.md")
        os.symlink(keys / "audit.key", skills / "good" / "references" / "leak.md")
        os.symlink(outside / "SKILL.md", skills / "good" / "references" / "out.md")

        index = ok_payload(srv.call_tool("load_skill", {})["result"])
        by_name = {s["name"]: s for s in index["skills"]}
        assert set(by_name) == {"good", "stolen"}, "links out of templates/skills are skipped"
        assert by_name["stolen"]["indexed"] is False and ".sdd" in by_name["stolen"]["problem"]
        assert "description" not in by_name["stolen"]

        for args, code in [
            ({"name": "keyfile"}, "private_path"),
            ({"name": "keysdir"}, "private_path"),
            ({"name": "sdd"}, "private_path"),
            ({"name": "stolen"}, "private_path"),
            ({"name": "escape"}, "path_escapes"),
            ({"name": "readme"}, "path_escapes"),
            ({"name": "good", "reference": "leak.md"}, "private_path"),
            ({"name": "good", "reference": "out.md"}, "path_escapes"),
        ]:
            assert refusal(srv.call_tool("load_skill", args)["result"])["error"] == code, args
        good = ok_payload(srv.call_tool("load_skill", {"name": "good", "reference": "fine.md"})["result"])
        assert good["references"] == ["fine.md"], "links out of the folder are not listed"
        assert good["reference"]["content"] == "fine"
        assert_no_key_in(srv, workdir)
        srv.close()


def test_check_file_hashes_only_recorded_visible_paths_inside_the_project(launcher, workdir, tmp_path):
    (workdir / ".env").write_text("TOKEN=hunter2\n")
    (workdir / "out").mkdir()
    (workdir / "out" / "report.md").write_text("# report")
    (workdir / "notes.md").write_text("never posted")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# report")
    with started(launcher, "check-file", tier="all") as srv:
        task = ok_payload(srv.call_tool("bernstein_run", {"goal": "Post things"})["result"])["task_id"]
        os.symlink(outside, workdir / "out" / "escape.md")
        os.symlink(workdir / ".sdd" / "keys" / "audit.key", workdir / "out" / "key.md")
        for key in ["out/report.md", "out/escape.md", "out/key.md", ".env", ".sdd/keys/audit.key"]:
            post = {"task_id": task, "key": key, "kind": "report", "title": "T", "content": "# report"}
            ok_payload(srv.call_tool("bernstein_post_artifact", post)["result"])

        def check(path: str) -> dict:
            return srv.call_tool("bernstein_verify_lineage", {"artefact_path": path, "check_file": True})["result"]

        hashed = ok_payload(check("out/report.md"))
        assert hashed["file"]["matches_newest"] is True
        assert hashed["file"]["sha256"].startswith("sha256:")
        for path, code in [
            (".sdd/keys/audit.key", "private_path"),
            (".sdd/keys/signing.ed25519", "private_path"),
            (".env", "private_path"),
            ("notes.md", "file_not_recorded"),
            ("out/escape.md", "path_escapes"),
            ("out/key.md", "private_path"),
        ]:
            err = refusal(check(path))
            assert err["error"] == code, (path, err)
            assert err["message"], err
        assert_no_key_in(srv, workdir)
        srv.close()


def start_refused(launcher, workdir: Path) -> str:
    argv = launcher.server_argv()
    proc = subprocess.run(argv, input="", capture_output=True, text=True, env=base_env(), cwd=str(workdir), timeout=60)
    assert proc.returncode != 0, "the server started on an open keys directory"
    return proc.stderr


@pytest.mark.parametrize("mode", [0o777, 0o750, 0o705])
def test_an_open_keys_dir_is_refused_at_start_with_the_chmod_fix(launcher, workdir, mode):
    init = run_cli(["init", "--workdir", str(workdir)])
    assert init.returncode == 0, init.stderr
    keys = workdir / ".sdd" / "keys"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700, "init creates the keys directory 0700"
    keys.chmod(mode)
    err = start_refused(launcher, workdir)
    assert f"chmod 700 {keys}" in err, err
    for text in [(keys / "audit.key").read_text().strip()]:
        assert text not in err
    keys.chmod(0o700)
    with RawServer.start(launcher, "after-chmod") as srv:
        srv.initialize("2025-06-18")
        srv.close()


# A parse error cannot name the request's id (JSON-RPC answers it with id null).
@pytest.mark.transcript(require_all_answered=False)
def test_a_duplicate_key_is_a_parse_error_over_stdio(launcher, workdir):
    with RawServer.start(launcher, "dup-keys", tier="all") as srv:
        srv.initialize("2025-06-18")
        for line, key in [
            (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bernstein_status","name":"bernstein_run","arguments":{"goal":"dup"}}}', "name"),
            (b'{"jsonrpc":"2.0","id":8,"id":9,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":"dup"}}}', "id"),
            (b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":"dup","\\u0067oal":"x"}}}', "goal"),
            (b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"bernstein_run","arguments":{"goal":"dup"},"_meta":{"progressToken":1,"progressToken":2}}}', "progressToken"),
        ]:
            srv.send_bytes(line + b"\n")
            resp = srv.recv()
            assert resp.get("id") is None and resp["error"]["code"] == -32700, resp
            assert f'duplicate key "{key}" in an object' in resp["error"]["message"], resp
        # Still serving, and nothing ran.
        assert "result" in srv.request("ping")
        srv.close()
    kinds = [json.loads(line.raw)["kind"] for line in ledger_lines(workdir / ".sdd")]
    assert "task.created" not in kinds, kinds
