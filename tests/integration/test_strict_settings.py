"""Settings are strict (a boolean is one of six words, a heartbeat at least a second) and lazy (a
bad value stops only a command that reads it), through ``python -m pipeline`` as CI runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix
from tests.support.release_runs import make_run

pytestmark = pytest.mark.integration

MATRIX = ROOT / "matrix.toml"


@pytest.mark.parametrize("text,value", [("true", True), ("YES", True), ("1", True), (" False ", False),
                                        ("no", False), ("0", False)])  # fmt: skip
def test_the_six_boolean_words(text: str, value: bool) -> None:
    assert S.pick(S.FORCE, environ={"PIPELINE_FORCE": text}).value is value


@pytest.mark.parametrize("text", ["on", "off", "y", "enabled", "2", "truee"])
def test_any_other_boolean_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(UsageError) as err:
        S.pick(S.FORCE, environ={"PIPELINE_FORCE": text})
    assert err.value.message == f"PIPELINE_FORCE: expected true, false, 1, 0, yes or no, got {text!r}"


def test_a_forced_publish_spelled_on_is_refused_not_taken_for_false(tmp_path: Path) -> None:
    make_run(tmp_path / "out")
    proc = run_pipeline(["--matrix", str(MATRIX), "publish", "--out", str(tmp_path / "out")],
                        env={"PIPELINE_FORCE": "on", "GITHUB_TOKEN": "", "GH_TOKEN": ""})  # fmt: skip
    assert proc.returncode == UsageError.exit_code, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: PIPELINE_FORCE: expected true, false, 1, 0, yes or no, got 'on'"
    ]


def test_a_bad_debug_variable_is_one_line_for_every_command() -> None:
    proc = run_pipeline(["--matrix", str(MATRIX), "legs", "--json"], env={"PIPELINE_DEBUG": "verbose"})
    assert proc.returncode == UsageError.exit_code
    assert proc.stderr.strip().splitlines() == [
        "error: PIPELINE_DEBUG: expected true, false, 1, 0, yes or no, got 'verbose'"
    ]


@pytest.mark.parametrize("name,value", [("PIPELINE_HEARTBEAT", "abc"), ("PIPELINE_HEARTBEAT", "0.001"),
                                        ("PIPELINE_HTTP_BACKOFF", "-1"), ("PIPELINE_WAIT_LOCK", "soon"),
                                        ("PIPELINE_HTTP_RETRY_BUDGET", "forever")])  # fmt: skip
def test_a_bad_value_of_a_setting_a_command_does_not_read_does_not_stop_it(name: str, value: str) -> None:
    proc = run_pipeline(["--matrix", str(MATRIX), "legs", "--json"], env={name: value})
    assert proc.returncode == 0, proc.stderr
    assert "cpu" in [leg["name"] for leg in json.loads(proc.stdout)]


@pytest.mark.parametrize("value,why", [
    ("0.001", "expected 0 (no heartbeat) or 1 to 3600 seconds, got '0.001'"),
    ("abc", "expected seconds between 0 and 3600, got 'abc'"),
])  # fmt: skip
def test_a_build_refuses_a_bad_heartbeat_before_any_work(tmp_path: Path, value: str, why: str) -> None:
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=1)
    write_matrix(ws / "matrix.toml")
    proc = run_pipeline(["--matrix", str(ws / "matrix.toml"), "build", "cpu", "--source", str(ws / "project"),
                         "--out", str(ws / "out"), "--ccache-dir", str(tmp_path / "cache"), "--tag", "b5"],
                        env={"PIPELINE_HEARTBEAT": value})  # fmt: skip
    assert proc.returncode == UsageError.exit_code, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [f"error: PIPELINE_HEARTBEAT: {why}"]
    assert not (ws / "out").exists()  # no record, no lock: nothing was started
