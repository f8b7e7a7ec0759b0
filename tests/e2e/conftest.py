"""Fixtures shared by the whole end-to-end suite.

* `runtime` is parametrized over $BERNSTEIN_E2E_RUNTIMES (default `std,smol`), so every
  server test runs on both runtimes.
* `workdir` is a fresh project directory per test; at teardown, if the test left a ledger,
  `bernstein audit verify --dir <workdir>/.sdd` must exit 0.
* `launcher` starts recorded servers; at teardown every message each of them wrote is
  validated against the official MCP schema of the revision in force (harness/transcript.py).

The era-specific directories are collected only in the matching venv: `handshake/` needs
`mcp<2`, `stateless/` needs `mcp>=2`; `common/` needs neither (raw pipes and the CLI).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from harness import launch
from harness.http_server import HttpServer
from harness.ledger import assert_verifies
from harness.transcript import check_recording, recordings_in


def _mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return None


_MAJOR = _mcp_major()
collect_ignore = []
if _MAJOR != 1:
    collect_ignore.append("handshake")
if _MAJOR is None or _MAJOR < 2:
    collect_ignore.append("stateless")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "transcript(require_all_answered=True): options for the schema check at teardown"
    )


def pytest_report_header(config):
    return [
        f"bernstein binary: {launch.binary_path()}",
        f"runtimes: {','.join(launch.runtimes())}; mcp SDK major: {_MAJOR}",
        f"schemas: {launch.schema_dir()}",
    ]


def pytest_generate_tests(metafunc):
    if "runtime" in metafunc.fixturenames:
        metafunc.parametrize("runtime", launch.runtimes())


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def bernstein_bin() -> Path:
    path = launch.binary_path()
    if not path.is_file():
        pytest.fail(f"{path} does not exist: build it first (cargo build -p bernstein)")
    if not launch.schema_dir().is_dir():
        pytest.fail(f"{launch.schema_dir()} does not exist: the vendored MCP schemas are missing")
    return path


@pytest.fixture
def workdir(tmp_path: Path):
    """A fresh project directory; its ledger must verify after the test."""
    work = tmp_path / "work"
    work.mkdir()
    yield work
    sdd = work / ".sdd"
    if sdd.exists():
        assert_verifies(sdd)


@pytest.fixture
def launcher(request, bernstein_bin: Path, runtime: str, workdir: Path, tmp_path: Path):
    """Starts recorded servers on `workdir`; validates every transcript at teardown."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    lnch = launch.Launcher(binary=bernstein_bin, runtime=runtime, workdir=workdir, logdir=logdir)
    request.node._bernstein_logdir = logdir
    yield lnch
    marker = request.node.get_closest_marker("transcript")
    opts = dict(marker.kwargs) if marker else {}
    problems: list[str] = []
    prefixes = recordings_in(logdir)
    for prefix in prefixes:
        problems.extend(check_recording(prefix, **opts))
    if problems:
        shown = "\n".join(problems[:40])
        more = f"\n... and {len(problems) - 40} more" if len(problems) > 40 else ""
        pytest.fail(f"server messages failed MCP schema validation:\n{shown}{more}", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    logdir = getattr(item, "_bernstein_logdir", None)
    if report.failed and logdir is not None and Path(logdir).is_dir():
        for err in sorted(Path(logdir).glob("*.stderr.log")):
            text = err.read_text(encoding="utf-8", errors="replace")
            if text.strip():
                report.sections.append((f"server stderr {err.name}", text[-3000:]))


@pytest.fixture
def http_server(launcher):
    """A factory: `http_server(label, **kw)` -> a running, ready `HttpServer` (recorded; stopped
    at teardown)."""
    started: list[HttpServer] = []

    def start(label: str = "http", **kw) -> HttpServer:
        srv = HttpServer(launcher, label, **kw)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
