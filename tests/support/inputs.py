"""Run inputs for tests: a given environment and moment, never this process's."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pipeline.inputs.matrix import Matrix
from pipeline.inputs.run_inputs import RunInputs, read_inputs

A_MOMENT = datetime(2026, 8, 12, 18, tzinfo=UTC)


def make_inputs(
    matrix: Matrix | None = None,
    *,
    now: datetime | None = None,
    environ: Mapping[str, str] | None = None,
    with_resolution: bool = True,
    any_tag: bool = False,
    **flags: Any,
) -> RunInputs:
    """RunInputs as the CLI would build them from ``flags`` (argparse dests), ``environ`` and a clock at ``now``."""
    moment = now or A_MOMENT
    text_flags = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in flags.items()}
    return read_inputs(
        argparse.Namespace(**text_flags),
        environ={"PIPELINE_MATRIX": "/nonexistent/matrix.toml", **(environ or {})},
        clock=lambda: moment,
        need_matrix=False,
        with_resolution=with_resolution,
        any_tag=any_tag,
        matrix=matrix,
    )


def leg_inputs(
    matrix: Matrix,
    *,
    out: Any,
    tag: str | None = None,
    ccache_dir: Any = None,
    now: datetime | None = None,
    **flags: Any,
) -> RunInputs:
    """The inputs of one `build LEG --source DIR --out OUT --tag TAG --ccache-dir DIR` run, in this process's environment."""
    import os

    extra = {"tag": tag} if tag else {}
    if ccache_dir is not None:
        extra["ccache_dir"] = str(ccache_dir)
    return make_inputs(
        matrix, now=now, environ=dict(os.environ), any_tag=True, out=str(out), **extra, **flags
    )


def download_cache_dir() -> Any:
    """Where this process's environment puts downloaded toolchain archives."""
    import os

    return make_inputs(environ=dict(os.environ), with_resolution=False).download_cache


def toolchains_dir() -> Any:
    """Where this process's environment puts installed toolchains."""
    import os

    return make_inputs(environ=dict(os.environ), with_resolution=False).toolchain_dir


def prepare_leg_toolchain(
    matrix: Matrix, leg: str, console: Any, *, now: datetime | None = None, **flags: Any
) -> Any:
    """The toolchain a `build LEG` run prepares (resolving a ROCm leg first), in this process's environment."""
    import os

    from pipeline.backends import prepare_toolchain, toolchain_request
    from pipeline.run_resolution import leg_rocm

    inputs = make_inputs(matrix, now=now, environ=dict(os.environ), **flags)
    obj = matrix.leg(leg)
    # What `build LEG` does without --rocm-path/--cuda-path/--vulkan-sdk: resolve first (resolve_leg), then
    # the toolchain step's request with the resolved build.
    return prepare_toolchain(
        toolchain_request(inputs, obj, rocm=leg_rocm(inputs, obj, rocm_path=None)), console
    )
