"""Bad input on the command line: one line on stderr, exit 2, no traceback, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.httpserver import LocalServer, Response
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_matrix
from tests.support.rocm_leg import LEG as ROCM_LEG
from tests.support.rocm_leg import rocm_matrix

CASES = {
    "syntax": ("[legs.cpu\nbackend = 'cpu'\n", "TOML syntax error"),
    "unknown key": ("[legs.cpu]\nbackend = 'cpu'\nflags = []\n", "legs.cpu.flags: unknown key"),
    "wrong type": ("[legs.cpu]\nbackend = 'cpu'\ncmake_args = 1\n", "expected an array of strings"),
    "missing key": ("[legs.cpu]\nos = 'linux'\n", "legs.cpu.backend: required key is missing"),
    # The typo is the cause, not the missing key it leaves: name it.
    "misspelt required key": (
        "[legs.cpu]\nbacknd = 'cpu'\n",
        "legs.cpu.backnd: unknown key (did you mean 'backend'?); legs.cpu.backend is required",
    ),
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
    proc = run_pipeline(
        ["--matrix", str(matrix), "build", "cpu", "--source", str(tmp_path), "--out", str(tmp_path / "out")]
    )
    _assert_one_clean_line(proc, expected)
    assert str(matrix) in proc.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_leg(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpux", "--out", str(tmp_path / "out")])
    _assert_one_clean_line(proc, "unknown leg 'cpux'")
    assert "did you mean 'cpu'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_guess_for_an_unknown_leg_comes_before_the_list_of_legs(tmp_path: Path) -> None:
    """The shipped matrix lists 30 legs: the "did you mean" must not hide after hundreds of characters."""
    matrix = ROOT / "matrix.toml"
    proc = run_pipeline(["--matrix", str(matrix), "build", "cpux", "--out", str(tmp_path / "out")])
    _assert_one_clean_line(
        proc, f"error: unknown leg 'cpux' in {matrix} (did you mean 'cpu'?): expected one of "
    )
    line = proc.stderr.strip()
    assert len(line) > 500 and line.index("did you mean") < 100


def test_source_that_is_not_a_cmake_project(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    (tmp_path / "notcmake").mkdir()
    proc = run_pipeline(
        [
            "--matrix",
            str(matrix),
            "build",
            "cpu",
            "--source",
            str(tmp_path / "notcmake"),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    _assert_one_clean_line(proc, "--source")
    assert "not a CMake project" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("make", "expected"), [("file", "not a directory"), ("nothing", "no such directory")]
)
def test_a_source_that_is_a_file_is_not_a_directory(make: str, expected: str, tmp_path: Path) -> None:
    """A file given for --source is named as such, not reported missing."""
    matrix = write_matrix(tmp_path / "matrix.toml")
    source = tmp_path / "CMakeLists.txt"
    if make == "file":
        source.write_text("project(x)\n")
    proc = run_pipeline(
        ["--matrix", str(matrix), "build", "cpu", "--source", str(source), "--out", str(tmp_path / "out")]
    )
    _assert_one_clean_line(proc, f"error: --source {source}: {expected}")
    assert proc.stderr.strip() == f"error: --source {source}: {expected}"
    assert not (tmp_path / "out").exists()


def test_missing_matrix(tmp_path: Path) -> None:
    proc = run_pipeline(["legs"], cwd=tmp_path)
    _assert_one_clean_line(proc, "matrix.toml: matrix file not found")


def test_offline_clone_failure_suggests_source(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "matrix.toml")
    (tmp_path / "matrix.toml").write_text(
        matrix.read_text().replace("https://example.invalid/llama.cpp.git", str(tmp_path / "no-such-repo"))
    )
    proc = run_pipeline(
        ["--matrix", str(matrix), "build", "cpu", "--out", str(tmp_path / "out"), "--tag", "b1"]
    )
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
    proc = run_pipeline(
        ["--matrix", str(matrix), "build", "cpu", *source, "--tag", tag, "--out", str(tmp_path / "out")]
    )
    _assert_one_clean_line(proc, f"--tag {tag!r}")
    assert not (tmp_path / "out").exists()


# Month 13: the shape of a TheRock version (X.Y.Z + a + 8 digits), not a date.
NO_SUCH_DATE = "10.1.0a20261399"
POLICY_EXPECTED_START = (
    "expected 'weekly-stable', 'weekly', 'latest', 'stable' or a version like '10.1.0a20260807'"
)


def _policy_commands(tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "CMakeLists.txt").write_text("project(x)\n")
    out = str(tmp_path / "out")
    return {
        "legs": ["legs"],
        "resolve": ["resolve", "--out", out],
        "build": ["build", ROCM_LEG, "--source", str(tmp_path / "proj"), "--out", out],
    }


@pytest.mark.parametrize("command", ["legs", "resolve", "build"])
def test_a_matrix_policy_whose_date_is_not_a_day_is_refused_before_any_work(
    command: str, tmp_path: Path
) -> None:
    """One rule of a version everywhere: `legs` used to accept month 13, `resolve` to ask the index six times."""
    with LocalServer() as index:
        index.route("/index/", Response(200, b"<html></html>"))
        matrix = rocm_matrix(tmp_path / "matrix.toml", index.url("/index/"), "content")
        matrix.write_text(matrix.read_text().replace('policy = "weekly"', f'policy = "{NO_SUCH_DATE}"'))
        proc = run_pipeline(
            ["--matrix", str(matrix), *_policy_commands(tmp_path)[command]],
            env={"PIPELINE_HTTP_BACKOFF": "0"},
        )
        assert index.requests == []
    _assert_one_clean_line(proc, f"error: {matrix}: rocm.policy: {POLICY_EXPECTED_START}")
    assert proc.stderr.rstrip().endswith(f"got {NO_SUCH_DATE!r}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["resolve", "build"])
def test_the_same_policy_as_a_flag_is_refused_the_same_way(command: str, tmp_path: Path) -> None:
    with LocalServer() as index:
        index.route("/index/", Response(200, b"<html></html>"))
        matrix = rocm_matrix(tmp_path / "matrix.toml", index.url("/index/"), "content")
        proc = run_pipeline(
            ["--matrix", str(matrix), *_policy_commands(tmp_path)[command], "--rocm-version", NO_SUCH_DATE],
            env={"PIPELINE_HTTP_BACKOFF": "0"},
        )
        assert index.requests == []
    _assert_one_clean_line(proc, f"error: --rocm-version: {POLICY_EXPECTED_START}")
    assert proc.stderr.rstrip().endswith(f"got {NO_SUCH_DATE!r}")
    assert not (tmp_path / "out").exists()
