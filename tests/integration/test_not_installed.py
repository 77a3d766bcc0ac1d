"""``python -m pipeline`` from a checkout in a Python without the project's dependencies: one line, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration


def _bare_python(tmp_path: Path) -> Path:
    # A bare virtualenv: this Python, none of the project's dependencies (no pip either: nothing installed).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    return tmp_path / "venv" / "bin" / "python"


def _run(python: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pipeline", *argv], cwd=cwd, env={"PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_help_answers_without_the_dependencies(tmp_path: Path) -> None:
    # --help imports no third-party module (tests/integration/test_import_cost.py): it answers anywhere.
    proc = _run(_bare_python(tmp_path), ["--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m pipeline") and "build" in proc.stdout


@pytest.mark.parametrize(
    "argv", [["build", "cpu", "--matrix", str(ROOT / "matrix.toml")], ["compare", "a", "b"]]
)
def test_a_missing_dependency_says_how_to_install_in_one_line(tmp_path: Path, argv: list[str]) -> None:
    proc = _run(_bare_python(tmp_path), argv, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: python -m pipeline needs its dependencies installed (no module named '"), (
        line
    )
    assert f'pip install -e "{ROOT}"' in line
