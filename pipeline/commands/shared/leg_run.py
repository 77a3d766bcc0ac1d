"""One run of a leg's steps from the parsed leg-run flags (``build``, ``shard``): its options, its console and
its resolution, settled once before the first step."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.inputs.leg import Leg
from pipeline.inputs.resolution_file import LegResolution
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg.options import LegOptions


def run_leg_from_args(
    args: argparse.Namespace,
    inputs: RunInputs,
    leg: Leg,
    *,
    run_inputs: RunInputs | None = None,
    **extra: Any,
) -> None:
    """Run ``leg`` with the flags of :func:`pipeline.commands.shared.build_args.add_leg_run_arguments` and the
    command's own ``extra`` options; ``run_inputs``: the inputs its steps see, when not ``inputs`` (a shard's)."""
    from pipeline.leg.steps import run_leg
    from pipeline.run_resolution import resolve_leg
    from pipeline.util.console import make_console

    options = LegOptions(
        source_tree=args.source,
        rocm_path=inputs.rocm_path,
        cuda_path=args.cuda_path,
        vulkan_sdk=args.vulkan_sdk,
        remote_cache=args.remote_cache,
        **extra,
    )
    console = make_console(inputs.environ, stderr=False)
    tree_given = options.source_tree is not None or inputs.source_archive is not None

    def resolve() -> LegResolution:
        # Before the leg's first step, once: its TheRock build and the source to check out (from the run's
        # resolution when one is named).
        with console.status(f"resolving {leg.name}'s toolchain and source"):
            return resolve_leg(inputs, leg, rocm_path=options.rocm_path, tree_given=tree_given)

    run_leg(run_inputs or inputs, leg, options, console, resolve=resolve)
