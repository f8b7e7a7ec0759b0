"""`load_skill` and `bernstein_scenario` through the real binary, on every runtime: the skills
index and one skill's files, names that could escape refused, a symlink out of the project
skipped in the index and refused by name; scenarios listed from the built-ins and the project's
folder, run as one run polled by `bernstein_run_status`. Structured results are checked against the advertised
outputSchema where there is one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from harness.payloads import ok_payload, refusal
from harness.raw import RawServer

BACKEND = """---
name: backend
description: Server code and APIs.
references:
  - conventions.md
scripts:
  - lint.sh
---
# Backend
"""


@pytest.fixture
def skills(workdir: Path, tmp_path: Path) -> Path:
    root = workdir / "templates" / "skills"
    (root / "backend" / "references").mkdir(parents=True)
    (root / "backend" / "scripts").mkdir()
    (root / "backend" / "SKILL.md").write_text(BACKEND)
    (root / "backend" / "references" / "conventions.md").write_text("Use types.")
    (root / "backend" / "scripts" / "lint.sh").write_text("#!/bin/sh\ntouch ran\n")
    (root / "qa").mkdir()
    (root / "qa" / "SKILL.md").write_text("# QA checklist\n")
    outside = tmp_path / "outside-skill"
    outside.mkdir()
    (outside / "SKILL.md").write_text("# secret\n")
    os.symlink(outside, root / "leak")
    return root


def schemas(srv: RawServer) -> dict[str, dict]:
    tools = srv.request("tools/list")["result"]["tools"]
    return {t["name"]: t.get("outputSchema") for t in tools}


def structured(srv: RawServer, out: dict[str, dict], name: str, args: dict) -> dict:
    """Calls `name`; where an outputSchema is advertised, checks structuredContent against it,
    else checks there is none (only the polled tools declare one); returns the payload."""
    resp = srv.call_tool(name, args)
    result = resp["result"]
    payload = ok_payload(result)
    if out[name] is None:
        assert "structuredContent" not in result, result
        return payload
    assert "structuredContent" in result, result
    jsonschema.validate(result["structuredContent"], out[name])
    return payload


def test_skills_index_and_one_skill(launcher, workdir, skills):
    with RawServer.start(launcher, "skills") as srv:
        srv.initialize("2025-06-18")
        out = schemas(srv)
        index = structured(srv, out, "load_skill", {})
        by_name = {s["name"]: s for s in index["skills"]}
        assert set(by_name) == {"backend", "qa"}, "a symlink out of the project is skipped"
        assert by_name["backend"]["description"] == "Server code and APIs."
        assert by_name["backend"]["references"] == ["conventions.md"]
        assert by_name["qa"]["description"] == "QA checklist"
        one = structured(srv, out, "load_skill", {"name": "backend", "reference": "conventions.md", "script": "lint.sh"})
        assert one["body"] == BACKEND
        assert one["reference"]["content"] == "Use types."
        assert one["script"]["content"].startswith("#!/bin/sh")
        for args, code in [
            ({"name": "leak"}, "path_escapes"),
            ({"name": ".."}, "invalid_name"),
            ({"name": "backend", "reference": "../SKILL.md"}, "invalid_name"),
            ({"name": "nope"}, "unknown_skill"),
        ]:
            assert refusal(srv.call_tool("load_skill", args)["result"])["error"] == code, args
        srv.close()
    assert not (workdir / "ran").exists(), "scripts are returned, never run"


def test_scenarios_list_run_and_status(launcher, workdir):
    folder = workdir / "templates" / "scenarios"
    folder.mkdir(parents=True)
    nightly = {
        "id": "nightly",
        "name": "Nightly",
        "description": "Every night.",
        "tasks": [{"title": "Sweep", "role": "qa"}, {"title": "Report"}],
    }
    (folder / "nightly.json").write_text(json.dumps(nightly))
    (folder / "broken.json").write_text("{")
    with RawServer.start(launcher, "scenarios", tier="all") as srv:
        srv.initialize("2025-06-18")
        out = schemas(srv)
        listed = structured(srv, out, "bernstein_scenario", {"action": "list"})
        sources = {s["id"]: s["source"] for s in listed["scenarios"]}
        assert sources["nightly"] == "project"
        assert sources["docs-sync"] == "builtin"
        assert [p["file"] for p in listed["problems"]] == ["templates/scenarios/broken.json"]
        ran = structured(srv, out, "bernstein_scenario", {"action": "run", "scenario_id": "nightly", "context": "e2e"})
        run = ran["run"]
        assert [t["title"] for t in run["tasks"]] == ["Sweep", "Report"]
        handle = ok_payload(srv.call_tool("bernstein_run_status", {"run_id": run["run_id"]})["result"])
        assert handle["status"] == "working"
        status = structured(srv, out, "bernstein_scenario", {"action": "status", "run_id": run["run_id"]})
        assert status["handle"] == handle
        builtin = structured(srv, out, "bernstein_scenario", {"action": "run", "scenario_id": "dependency-audit"})
        assert builtin["run"]["source"] == "builtin"
        err = refusal(srv.call_tool("bernstein_scenario", {"action": "run", "scenario_id": "missing"})["result"])
        assert err["error"] == "unknown_scenario"
        srv.close()
