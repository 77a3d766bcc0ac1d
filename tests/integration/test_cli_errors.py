"""Bad input on the command line: one line on stderr, exit 2, no traceback, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_matrix

CASES = {
    "syntax": ("[legs.cpu\nbackend = 'cpu'\n", "TOML syntax error"),
    "unknown key": ("[legs.cpu]\nbackend = 'cpu'\nflags = []\n", "legs.cpu.flags: unknown key"),
    "wrong type": ("[legs.cpu]\nbackend = 'cpu'\ncmake_args = 1\n", "expected an array of strings"),
    "missing key": ("[legs.cpu]\nos = 'linux'\n", "legs.cpu.backend: required key is missing"),
    "duplicate leg": ("[legs.cpu]\nbackend = 'cpu'\n[legs.cpu]\nbackend = 'cpu'\n", "TOML syntax error"),
    "unsafe name": ("[legs.'a b']\nbackend = 'cpu'\n", "unsafe leg name"),
    "unknown backend": ("[legs.cpu]\nbackend = 'cpux'\n", "did you mean 'cpu'"),
}


def _assert_one_clean_line(proc, expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]


@pytest.mark.parametrize("case", CASES)
def test_malformed_matrix(case: str, tmp_path: Path) -> None:
    text, expected = CASES[case]
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(text)
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpu", "--source", str(tmp_path), "--out", str(tmp_path / "out")])
    _assert_one_clean_line(proc, expected)
    assert str(matrix) in proc.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_leg(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpux", "--out", str(tmp_path / "out")])
    _assert_one_clean_line(proc, "unknown leg 'cpux'")
    assert "did you mean 'cpu'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_source_that_is_not_a_cmake_project(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    (tmp_path / "notcmake").mkdir()
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpu", "--source", str(tmp_path / "notcmake"),
                         "--out", str(tmp_path / "out")])
    _assert_one_clean_line(proc, "--source")
    assert "not a CMake project" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_missing_matrix(tmp_path: Path) -> None:
    proc = run_pipeline(["legs"], cwd=tmp_path)
    _assert_one_clean_line(proc, "matrix.toml: matrix file not found")


def test_offline_clone_failure_suggests_source(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    (tmp_path / "matrix.toml").write_text(matrix.read_text().replace(
        "https://example.invalid/llama.cpp.git", str(tmp_path / "no-such-repo")))
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpu", "--out", str(tmp_path / "out"), "--tag", "b1"])
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(tmp_path / "no-such-repo") in lines[0] and "pass --source DIR" in lines[0]
    # The record, written as running before the clone, says how the run ended.
    assert json.loads((tmp_path / "out" / "cpu" / "record.json").read_text())["status"] == "failed"


@pytest.mark.parametrize(("tag", "with_source"), [("v1.0", False), ("../../etc", True), ("b12 ", False)])
def test_malformed_tag(tag: str, with_source: bool, tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "CMakeLists.txt").write_text("project(x)\n")
    source = ["--source", str(tmp_path / "proj")] if with_source else []
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpu", *source, "--tag", tag, "--out", str(tmp_path / "out")])
    _assert_one_clean_line(proc, f"--tag {tag!r}")
    assert not (tmp_path / "out").exists()
