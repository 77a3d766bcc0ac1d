"""``python -m pipeline`` from a checkout in a Python without the project's dependencies: one line, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("argv", [["--help"], ["build", "cpu", "--matrix", str(ROOT / "matrix.toml")]])
def test_a_missing_dependency_says_how_to_install_in_one_line(tmp_path: Path, argv: list[str]) -> None:
    # A bare virtualenv: this Python, none of the project's dependencies (no pip either: nothing installed).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    proc = subprocess.run([str(python), "-m", "pipeline", *argv], cwd=tmp_path, env={"PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: python -m pipeline needs its dependencies installed (no module named '"), line
    assert f'pip install -e "{ROOT}"' in line
