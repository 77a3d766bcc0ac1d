"""The noxfile itself: sessions come from the matrix, a leg session builds, bad input is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import ROOT
from tests.support.projects import write_cpp_project, write_matrix


def _nox(args: list[str], matrix: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # --force-venv-backend none: this test runs in an environment that has the
    # project installed already; creating a venv per test would only measure pip.
    return subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "--force-venv-backend", "none", *args],
        cwd=cwd,
        env={**os.environ, "PIPELINE_MATRIX": str(matrix), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_sessions_come_from_the_matrix(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "m.toml", extra='\n[legs.cpu-clang]\nbackend = "cpu"\n')
    proc = _nox(["-l"], matrix, tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("cpu", "cpu-clang", "resolve", "nightly", "tests", "lint", "report", "prune", "bench"):
        assert f"- {name} ->" in proc.stdout or f"* {name} ->" in proc.stdout, name


def test_leg_session_builds_with_arguments_after_dashes(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "m.toml")
    write_cpp_project(tmp_path / "proj", units=3)
    out = tmp_path / "out"
    proc = _nox(["-s", "cpu", "--", "--source", str(tmp_path / "proj"), "--out", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--no-bundle"], matrix, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((out / "cpu" / "record.json").read_text())
    assert record["ccache"]["misses"] == 4


def test_bad_matrix_is_one_line(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text("[legs.cpu]\nbackend = 'gpu'\n")
    proc = _nox(["-l"], matrix, tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"error: {matrix}: legs.cpu.backend" in proc.stderr
