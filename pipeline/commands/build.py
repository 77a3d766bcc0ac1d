"""``python -m pipeline build LEG``: what ``nox -s LEG`` runs."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.build_args import add_build_arguments
from pipeline.inputs.resolution_file import LegResolution
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg.options import LegOptions


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
    from pipeline.leg.steps import run_leg
    from pipeline.run_resolution import resolve_leg
    from pipeline.util.console import make_console

    leg = inputs.require_matrix().leg(args.leg)
    options = LegOptions(
        source_tree=args.source,
        rocm_path=inputs.rocm_path,
        cuda_path=args.cuda_path,
        vulkan_sdk=args.vulkan_sdk,
        remote_cache=args.remote_cache,
        no_bundle=args.no_bundle,
        configure_only=args.configure_only,
        # The resolution decides, as it decides the cache key (cache-key): the two never disagree.
        warm_up=inputs.resolution is not None and inputs.resolution.warm_up is not None,
    )
    console = make_console(inputs.environ, stderr=False)
    tree_given = options.source_tree is not None or inputs.source_archive is not None

    def resolve() -> LegResolution:
        # Before the leg's first step, once: its TheRock build and the source to check out (from the run's
        # resolution when one is named).
        with console.status(f"resolving {leg.name}'s toolchain and source"):
            return resolve_leg(inputs, leg, rocm_path=options.rocm_path, tree_given=tree_given)

    run_leg(inputs, leg, options, console, resolve=resolve)
    return 0
