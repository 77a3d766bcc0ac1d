"""``python -m pipeline shard LEG --index I``: compile one shard of a leg's cold build into the shard's cache."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.build_args import add_leg_run_arguments
from pipeline.commands.shared.leg_run import run_leg_from_args
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "shard",
        help="compile one shard of a leg's compile steps into the shard's ccache (a cold build split over jobs)",
        description=(
            "Configures LEG as its build does (source, toolchain, flags, ccache settings), asks Ninja for the "
            "compile steps of its plan, and compiles this shard's part of them, a deterministic split by "
            "estimated cost, into the shard's own ccache folder (<leg's ccache>--shard-<I>of<N>), which the "
            "workflow saves under the shard's cache key. Nothing is linked or bundled. The leg's build merges "
            "the shard folders it finds into its own cache before it compiles. Output in "
            "<out>/<leg>--shard-<I>of<N>/; docs/caches.md, 'Shards for a cold build'."
        ),
    )
    p.add_argument("leg", metavar="LEG", help="a leg of the matrix that declares shards = N")
    p.add_argument("--index", type=_positive, required=True, metavar="I", help="this shard, 1 to N")
    p.add_argument(
        "--of", type=_positive, metavar="N", help="the leg's shard count, checked against matrix.toml's"
    )
    add_leg_run_arguments(p, ccache_help="the leg's ccache directory (the shard's is beside it)")
    S.add_flag(p, S.WAIT_LOCK)
    p.set_defaults(func=run, reads_resolution=True)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.inputs.leg import shard_spec
    from pipeline.leg.shard_step import shard_inputs

    leg = inputs.require_matrix().leg(args.leg)
    shard = shard_spec(leg, args.index, args.of)
    run_leg_from_args(
        args, inputs, leg, run_inputs=shard_inputs(inputs, leg, shard), no_bundle=True, shard=shard
    )
    return 0
