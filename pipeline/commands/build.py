"""``python -m pipeline build LEG``: what ``nox -s LEG`` runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline import settings as S
from pipeline.inputs import RunInputs
from pipeline.options import LegOptions


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "build",
        help="build one leg (what `nox -s LEG` runs)",
        description="Configure and build one leg with CMake, Ninja and ccache, then write "
        "<out>/<leg>/record.json and the bundle.",
    )
    add_build_arguments(p)
    p.set_defaults(func=run, reads_resolution=True)


def add_build_arguments(p: argparse.ArgumentParser) -> None:
    """The build's arguments: also what `resolve --for-build` reads a leg's run settings from."""
    p.add_argument("leg", metavar="LEG", help="a leg name from matrix.toml")
    p.add_argument("--source", type=Path, metavar="DIR", help="build this CMake source tree instead of cloning")
    S.add_flag(p, S.OUT)
    S.add_flag(
        p, S.TAG,
        help="llama.cpp tag, b<digits> or latest: what to check out without --source (the run's resolution "
        "wins); with --source, the bundle's tag (default there: git describe)",
    )
    S.add_flag(p, S.CACHE_DIR)
    S.add_flag(p, S.ROCM_VERSION)
    S.add_flag(p, S.NOW)
    S.add_flag(p, S.INDEX_URL)
    p.add_argument("--rocm-path", type=Path, metavar="DIR", help="use this ROCm install instead of downloading one")
    S.add_flag(p, S.RESOLVED)
    S.add_flag(p, S.REMOTE_CACHE)
    p.add_argument("--no-bundle", action="store_true", help="build only, do not package a bundle")


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from rich.console import Console

    from pipeline.build import run_leg

    leg = inputs.require_matrix().leg(args.leg)
    options = LegOptions(
        source=args.source, rocm_path=args.rocm_path, remote_cache=args.remote_cache, no_bundle=args.no_bundle
    )
    run_leg(inputs, leg, options, Console(stderr=False))
    return 0
