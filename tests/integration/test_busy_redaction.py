"""A second build refused by a busy output folder shows no password of the first one's command line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipeline.errors import BusyError
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration

PASSWORD = "pa55w0rd"
REMOTE = f"http://user:{PASSWORD}@127.0.0.1:9/c"

# The first build, as far as the lock sees it: a process whose command line carries the password,
# holding the leg's output folder through the pipeline's own lock until it is told to stop.
HOLDER = textwrap.dedent(
    """\
    import sys
    from datetime import UTC, datetime
    from pathlib import Path
    from pipeline.processes.locks import hold
    from pipeline.results.record import leg_lock
    with hold(leg_lock(Path(sys.argv[-1])), what="x", since=datetime.now(UTC)):
        print("held", flush=True)
        sys.stdin.read()
    """
)


def test_the_holder_file_and_the_busy_error_carry_no_password(tmp_path: Path) -> None:
    project = write_cpp_project(tmp_path / "project", units=1)
    matrix = write_matrix(tmp_path / "matrix.toml")
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "build", "cpu", "--remote-cache", REMOTE, str(out / "cpu")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        on_disk = (out / "cpu" / ".lock.holder.json").read_text()
        assert PASSWORD not in on_disk and "http://***@127.0.0.1:9/c" in on_disk
        start = time.monotonic()
        proc = run_pipeline(["--matrix", str(matrix), "build", "cpu", "--source", str(project), "--out", str(out),
                             "--remote-cache", REMOTE, "--ccache-dir", str(tmp_path / "cc")])  # fmt: skip
        assert time.monotonic() - start < 60
    finally:
        holder.communicate("")
    assert proc.returncode == BusyError.exit_code, proc.stdout + proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--remote-cache http://***@127.0.0.1:9/c" in lines[0], lines
