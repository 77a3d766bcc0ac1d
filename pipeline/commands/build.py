"""``python -m pipeline build LEG``: what ``nox -s LEG`` runs."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.build_args import add_build_arguments
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg.options import LegOptions


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "build",
        help="build one leg (what `nox -s LEG` runs)",
        description="Configure and build one leg with CMake, Ninja and ccache, then write "
        "<out>/<leg>/record.json and the bundle.",
    )
    add_build_arguments(p)
    p.set_defaults(func=run, reads_resolution=True)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.leg.steps import run_leg
    from pipeline.util.console import make_console

    leg = inputs.require_matrix().leg(args.leg)
    options = LegOptions(
        source=args.source, rocm_path=inputs.rocm_path, cuda_path=args.cuda_path, vulkan_sdk=args.vulkan_sdk,
        remote_cache=args.remote_cache, no_bundle=args.no_bundle,
        configure_only=args.configure_only,
    )
    run_leg(inputs, leg, options, make_console(inputs.environ, stderr=False))
    return 0
