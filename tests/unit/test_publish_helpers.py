"""The small pure helpers of publish, alert and release-exists."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.commands import release_exists
from pipeline.commands.alert import default_run_url
from pipeline.commands.release_exists import tag_from_resolution
from pipeline.commands.shared import github_args
from pipeline.errors import UsageError
from pipeline.github.rest import redact_token
from pipeline.inputs.matrix import parse_matrix
from pipeline.inputs.resolution_file import Resolution, SourceSpec
from pipeline.release.publish import content_type
from tests.support.inputs import make_inputs

LEGS = ["cpu", "cuda", "vulkan"]
MATRIX = parse_matrix({"legs": {leg: {"backend": leg} for leg in LEGS}}, Path("matrix.toml"))


def expected_legs(flag: str | None, env_value: str | None, all_legs: list[str]) -> list[str]:
    """`--legs`, else PIPELINE_LEGS, else every leg of the matrix (``all_legs``)."""
    assert all_legs == list(MATRIX.legs)
    environ = {"PIPELINE_LEGS": env_value} if env_value is not None else {}
    return github_args.expected_legs(argparse.Namespace(legs=flag), make_inputs(MATRIX, environ=environ))


def is_forced(flag: bool | None, env_value: str | None) -> bool:
    return release_exists.is_forced(flag, {"PIPELINE_FORCE": env_value} if env_value is not None else {})


def test_expected_legs_flag_then_environment_then_every_leg() -> None:
    assert expected_legs("cuda, cpu", "vulkan", LEGS) == ["cuda", "cpu"]
    assert expected_legs(None, "vulkan", LEGS) == ["vulkan"]
    assert expected_legs(None, "  ", LEGS) == LEGS
    assert expected_legs(None, None, LEGS) == LEGS
    with pytest.raises(UsageError, match="no leg rocm in the matrix"):
        expected_legs("cpu,rocm", None, LEGS)


def test_forced_by_the_flag_else_the_environment() -> None:
    assert is_forced(None, "true") and is_forced(None, "1") and not is_forced(None, "false")
    assert not is_forced(None, None) and not is_forced(None, "")
    assert is_forced(True, "false") and not is_forced(False, "true")


def test_tag_from_resolution() -> None:
    moment = datetime(2026, 8, 1, tzinfo=UTC)
    spec = SourceSpec(repo="https://github.com/ggml-org/llama.cpp", base_tag="b7000")
    good = Resolution(now=moment, rocm_policy="weekly", cutoff=None, source=spec)
    assert tag_from_resolution(good, "r.json") == "b7000"
    bare = Resolution(now=moment, rocm_policy="weekly", cutoff=None)
    with pytest.raises(UsageError, match=r"bare.json: no source tag"):
        tag_from_resolution(bare, "bare.json")


def test_run_url_from_the_runner_variables() -> None:
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "9"}
    assert default_run_url(env) == "https://github.com/o/r/actions/runs/9"
    assert default_run_url({}) is None


def test_redaction_and_content_types() -> None:
    assert redact_token("Bearer ghs_abc echoed ghs_abc", "ghs_abc") == "Bearer *** echoed ***"
    assert redact_token("nothing", "") == "nothing"
    assert content_type("llama-b1-bin-linux-cpu-x64.tar.gz") == "application/gzip"
    assert content_type("llama-b1-bin-windows-rocm-gfx1151-x64.zip") == "application/zip"
    assert content_type("SHA256SUMS").startswith("text/plain")
