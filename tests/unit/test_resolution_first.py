"""Resolution happens once, before a leg's steps: below the commands nothing resolves a ROCm build."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.backends import toolchain_request
from pipeline.errors import ToolchainError
from pipeline.inputs.matrix import load_matrix
from tests.support.inputs import make_inputs

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 6, 9, 17, tzinfo=UTC)
# Nothing listens there: a request would fail with a network error, not the line below.
NOWHERE = {"PIPELINE_HTTP_BACKOFF": "0"}


def test_a_rocm_request_without_a_resolved_build_is_refused_before_any_request() -> None:
    matrix = load_matrix(ROOT / "matrix.toml")
    inputs = make_inputs(matrix, now=NOW, environ=NOWHERE, index_url="http://127.0.0.1:9/")
    with pytest.raises(ToolchainError, match="no TheRock build was resolved for it and no --rocm-path given"):
        toolchain_request(inputs, matrix.leg("rocm-linux-gfx110X"))
    # An installed ROCm needs no resolution; a cpu leg none either.
    assert (
        toolchain_request(inputs, matrix.leg("rocm-linux-gfx110X"), rocm_path=Path("/opt/rocm")).rocm is None
    )
    assert toolchain_request(inputs, matrix.leg("cpu")).rocm is None
