"""Records of the wrong shape (another job's artifact): report, cache-save and publish say one line, no traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

MATRIX = str(ROOT / "matrix.toml")
GOOD: dict[str, Any] = {
    "leg": "cpu",
    "backend": "cpu",
    "os": "linux",
    "started": "2026-08-04T09:17:00Z",
    "status": "success",
    "wall_seconds": 12.5,
    "ccache": {"hits": 1, "misses": 2, "ccache_dir": "/nowhere"},
    "toolchain": {"identity": "gcc-12.2.0"},
    "source": {"tag": "b1"},
    "bundle": "dist/x.tar.gz",
}
# (field, value, what the error line says)
MISTYPED = [
    ("ccache", "fast", "'ccache' is 'fast', expected an object"),
    ("wall_seconds", "slow", "'wall_seconds' is 'slow', expected a number of seconds"),
    ("wall_seconds", True, "'wall_seconds' is True, expected a number of seconds"),
    ("timings", "quick", "'timings' is 'quick', expected an object or null"),
    ("timings", {"classes": {"host": {"seconds": "ten"}}}, "'timings.classes' is not an object of"),
    ("timings", {"timeline": [["a", 1, "host", "x.o"]]}, "'timings.timeline' is not a list of"),
    ("bundle_check", "ok", "'bundle_check' is 'ok', expected an object or null"),
    ("bundle_check", {"ok": False, "problems": 3}, "'bundle_check.problems' is not a list of problems"),
    ("toolchain", ["gcc"], "'toolchain' is ['gcc'], expected an object"),
    ("phases", {"build": "long"}, "'phases' is not an object of seconds"),
    (
        "status",
        "done",
        "'status' is 'done', expected one of running, success, configured, staged, warmed, sharded, failed, interrupted",
    ),
    ("error", 7, "'error' is 7, expected a string or null"),
    ("exit_code", "nine", "'exit_code' is 'nine', expected an exit code (1-255) or null"),
]


def write(out: Path, field: str, value: Any) -> Path:
    path = out / "cpu" / "record.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**GOOD, field: value}))
    return path


def one_line(proc: Any, code: int, expected: str) -> None:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines


@pytest.mark.parametrize(("field", "value", "expected"), MISTYPED)
def test_report_refuses_a_mistyped_record_in_one_line(
    tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    path = write(tmp_path / "out", field, value)
    proc = run_pipeline(["--matrix", MATRIX, "report", "--out", str(tmp_path / "out")])
    one_line(proc, 1, f"error: {path}: bad record: {expected}")
    assert not (tmp_path / "out" / "report.html").exists()


@pytest.mark.parametrize(("field", "value", "expected"), MISTYPED[:3])
def test_cache_save_refuses_a_mistyped_record_in_one_line(
    tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    path = write(tmp_path / "out", field, value)
    proc = run_pipeline(["--matrix", MATRIX, "cache-save", "cpu", "--out", str(tmp_path / "out")])
    one_line(proc, 1, f"error: {path}: bad record: {expected}")


@pytest.mark.parametrize(("field", "value", "expected"), MISTYPED[:2])
def test_publish_refuses_a_mistyped_record_in_one_line(
    tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    path = write(tmp_path / "out", field, value)
    proc = run_pipeline(
        ["--matrix", MATRIX, "publish", "--out", str(tmp_path / "out"), "--legs", "cpu"],
        env={"GITHUB_TOKEN": "", "GH_TOKEN": ""},
    )
    one_line(proc, 10, f"error: {path}: bad record: {expected}")
