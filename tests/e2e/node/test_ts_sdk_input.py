"""The TypeScript SDK 2.x as a host that answers the server's questions (2026-07-28 multi
round-trip requests): against the conformance fixture server (`bernstein-conformance-fixture`:
the same engine, transport and ledger as `bernstein mcp`, with the suite's tools that ask for
input), the SDK's own loop answers each `InputRequiredResult` through its elicitation and
sampling handlers and retries with `inputResponses` and the `requestState`.

Cases: a person who accepts (one round, several rounds with state carried by the server's
`requestState`), one who declines, and a host that declared no elicitation (never asked: the
server refuses with -32021 where a tool cannot do without, and asks only for what was declared
where it can).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from harness.launch import REPO_ROOT, base_env

READY = re.compile(r"serving MCP over HTTP at http://(\S+)/mcp")
START_GUARD = 60  # a hang guard for the server's start, never a timing assertion


def fixture_binary() -> Path:
    """$BERNSTEIN_CONFORMANCE_FIXTURE_BIN, else the cargo target dir's debug build."""
    explicit = os.environ.get("BERNSTEIN_CONFORMANCE_FIXTURE_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_ROOT / "target")
    if not target.is_absolute():
        target = REPO_ROOT / target
    return target / "debug" / "bernstein-conformance-fixture"


@pytest.fixture
def fixture_url(tmp_path):
    binary = fixture_binary()
    if not binary.exists():
        pytest.fail(f"{binary} is missing: cargo build -p bernstein-conformance-fixture", pytrace=False)
    workdir = tmp_path / "work"
    workdir.mkdir()
    stderr_path = tmp_path / "fixture.stderr.log"
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen([str(binary), "--workdir", str(workdir), "--host", "127.0.0.1", "--port", "0"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=base_env(), cwd=str(workdir))
    try:
        deadline = time.monotonic() + START_GUARD
        while not (m := READY.search(stderr_path.read_text(errors="replace"))):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the fixture server did not start: {stderr_path.read_text()[-2000:]}")
            time.sleep(0.02)  # polling the readiness line
        yield f"http://{m.group(1)}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def host(node_clients, url: str, caps: dict, tools: list[str], answer: dict | None = None) -> dict:
    env = node_clients._env({"URL": url, "CAPS": json.dumps(caps), "TOOLS": json.dumps(tools),
                             "ANSWER": json.dumps(answer or {"action": "cancel"})})
    r = subprocess.run([str(node_clients.node), str(node_clients.root / "clients" / "ts2_input.mjs")],
                       env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
                       cwd=str(node_clients.root))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no report (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    report = json.loads(lines[-1])
    assert "fatal" not in report, report["fatal"]
    assert report["protocolVersion"] == "2026-07-28", report
    return report


def text(call: dict) -> str:
    assert "error" not in call, call
    assert call["isError"] is False, call
    return json.loads(call["content"][0]["text"])


ELICIT = "test_input_required_result_elicitation"
ROUNDS = "test_input_required_result_multi_round"
STATE = "test_input_required_result_request_state"


def test_a_host_that_accepts_answers_every_round(node_clients, fixture_url):
    answer = {"action": "accept", "content": {"name": "Ada", "color": "blue", "ok": True}}
    rep = host(node_clients, fixture_url, {"elicitation": {}}, [ELICIT, ROUNDS, STATE], answer)
    assert text(rep["calls"][ELICIT]) == "Hello, Ada!"
    # Two rounds: the name asked first travels in the server's requestState to the second.
    assert text(rep["calls"][ROUNDS]) == "Ada's favourite colour is blue"
    assert text(rep["calls"][STATE]) == "state-ok: confirmed ok=true"
    assert rep["asked"]["elicitation"] == 4


def test_a_host_that_declines_is_heard(node_clients, fixture_url):
    rep = host(node_clients, fixture_url, {"elicitation": {}}, [ELICIT], {"action": "decline"})
    assert text(rep["calls"][ELICIT]) == "Hello, !"
    assert rep["asked"]["elicitation"] == 1


def test_a_host_without_elicitation_is_never_asked(node_clients, fixture_url):
    tools = [ELICIT, "test_input_required_result_capabilities"]
    rep = host(node_clients, fixture_url, {"sampling": {}}, tools)
    # The tool cannot do without a form: the server refuses, naming the capability.
    err = rep["calls"][ELICIT]["error"]
    assert err["code"] == -32021, err
    # A tool that can do without asks only for what was declared: the model, once.
    assert text(rep["calls"]["test_input_required_result_capabilities"]) == {"answered": ["greeting"]}
    assert rep["asked"] == {"elicitation": 0, "sampling": 1}
