"""A build joins the GNU Make jobserver named in ``MAKEFLAGS``: the test session's (tests/support/shared_jobs.py).

Real builds of a generated project by the pipeline, with Ninja's own
``.ninja_log`` as the oracle of how many compiles ran at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import shared_jobs
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration

UNITS = 24


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_cpp_project(tmp_path / "project", units=UNITS)
    write_matrix(tmp_path / "matrix.toml")
    return tmp_path


@pytest.fixture
def jobserver_of() -> Iterator[list[shared_jobs.Jobserver]]:
    made: list[shared_jobs.Jobserver] = []
    yield made
    for jobserver in made:
        jobserver.close()


def _build(ws: Path, name: str, env: dict[str, str]) -> Path:
    """A cold build (its own empty ccache) of the project into ``ws/name``; its build folder."""
    out = ws / name
    proc = run_pipeline(["--matrix", str(ws / "matrix.toml"), "build", "cpu", "--source", str(ws / "project"),
                         "--out", str(out), "--ccache-dir", str(ws / f"ccache-{name}"), "--no-bundle"],
                        env={"MAKEFLAGS": "", **env, "PIPELINE_CACHE_HOME": str(ws / f"home-{name}")})  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    return out / "cpu" / "build"


def _most_at_once(build: Path) -> tuple[int, int]:
    """(steps, the most that ran at the same time) of the build's ``.ninja_log`` (start and end in ms)."""
    spans = []
    for line in (build / ".ninja_log").read_text().splitlines():
        if line.startswith("#"):
            continue
        start, end, *_ = line.split("\t")
        spans.append((int(start), int(end)))
    # An end at the millisecond another starts is not an overlap: ends sort first.
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = most = 0
    for _, change in events:
        running += change
        most = max(most, running)
    return len(spans), most


def test_without_a_jobserver_ninja_runs_compiles_side_by_side(project: Path) -> None:
    # The control: Ninja's own parallelism (at least two at once on any machine with two cores).
    steps, most = _most_at_once(_build(project, "free", {}))
    assert steps >= UNITS
    assert most >= 2, f"{steps} steps, never two at once: this machine cannot show the jobserver's limit"


def test_with_no_token_in_the_fifo_one_compile_runs_at_a_time(
    project: Path, jobserver_of: list[shared_jobs.Jobserver]
) -> None:
    jobserver = shared_jobs.make(0)
    jobserver_of.append(jobserver)
    build = _build(project, "one", {"MAKEFLAGS": jobserver.makeflags})
    steps, most = _most_at_once(build)
    assert steps >= UNITS
    # Each client's own slot, and nothing more.
    assert most == 1
    assert "Jobserver mode detected" in (project / "one" / "cpu" / "build.log").read_text()


def test_a_token_allows_a_second_compile_and_comes_back(
    project: Path, jobserver_of: list[shared_jobs.Jobserver]
) -> None:
    jobserver = shared_jobs.make(1)
    jobserver_of.append(jobserver)
    steps, most = _most_at_once(_build(project, "two", {"MAKEFLAGS": jobserver.makeflags}))
    assert steps >= UNITS
    assert most <= 2
    # Every token Ninja took is back in the fifo when the build is over.
    assert jobserver.available() == 1


def test_the_session_jobserver_reaches_the_workers_with_cores_less_one_tokens() -> None:
    # Made by the controller in tests/conftest.py before pytest-xdist's workers started.
    fifo = shared_jobs.fifo()
    assert fifo is not None and fifo.is_fifo()
    env = shared_jobs.build_env()
    # make -j<cores>: the fifo holds one token less (each build's own slot).
    assert env["MAKEFLAGS"].split() == [f"-j{os.cpu_count()}", f"--jobserver-auth=fifo:{fifo}"]
