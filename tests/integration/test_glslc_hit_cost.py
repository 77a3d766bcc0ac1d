"""python -m scripts.bench.glslc_hit_cost at a tiny size: it runs, every warm pass is all hits, and it prints each figure.

Timings are checked for shape only (numbers), never against a target.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

if shutil.which("glslc") is None:
    pytest.skip("needs glslc (Debian: glslc)", allow_module_level=True)


def test_the_hit_cost_script_prints_old_and_new_per_call(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.bench.glslc_hit_cost",
            "--calls",
            "8",
            "--repeat",
            "1",
            "--jobs",
            "2",
            "--workdir",
            str(tmp_path / "work"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    number = r"\d+\.\d\d"
    for row in (
        "cold: glslc itself",
        "old hit: the Python launcher",
        "new hit: client and server, its start",
        "new hit: client and server, without",
    ):
        assert re.search(rf"^\| {re.escape(row)}[^|]* \| -?{number} \| -?{number} \|$", proc.stdout, re.M), (
            proc.stdout
        )
    assert "8 calls, --jobs 2, median of 1" in proc.stdout
    # Its folders are kept with --workdir: the warm passes' stats say all hits (the script checks it too).
    assert (tmp_path / "work" / "new-0" / "build" / "pipeline-glslc").is_dir()
    assert (tmp_path / "work" / "new-0" / "glslc-stats.log").read_text().split() == ["hit"] * 8
