"""``python -m pipeline build LEG``: what ``nox -s LEG`` runs."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.build_args import add_build_arguments
from pipeline.commands.shared.leg_run import run_leg_from_args
from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "build",
        help="build one leg (what `nox -s LEG` runs)",
        description="Configure and build one leg with CMake, Ninja and ccache, then write "
        "<out>/<leg>/record.json and the bundle. With a warm-up's resolution (python -m pipeline "
        "warm-up) it compiles next week's build into the leg's ccache and stops there: no bundle, "
        "the record says 'warmed'.",
    )
    add_build_arguments(p)
    p.set_defaults(func=run, reads_resolution=True)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    leg = inputs.require_matrix().leg(args.leg)
    run_leg_from_args(
        args,
        inputs,
        leg,
        no_bundle=args.no_bundle,
        configure_only=args.configure_only,
        # The resolution decides, as it decides the cache key (cache-key): the two never disagree.
        warm_up=inputs.resolution is not None and inputs.resolution.warm_up is not None,
    )
    return 0
