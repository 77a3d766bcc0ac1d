"""``python -m pipeline pack LEG``: pack a bundle the workflow's signing step signed (docs/signing.md)."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "pack",
        help="pack a signed leg's staged bundle (after the workflow's signing step)",
        description=(
            "A leg [signing] covers, built on Actions in [signing] repository, stops with its bundle's files "
            "staged in <out>/<leg>/bundle (record status 'staged') for the workflow's signing step. pack checks "
            "that every .exe and .dll there is signed by [signing] publisher and verifies (osslsigncode), packs "
            "the bundle into <out>/dist, runs the build's check-bundle on it and ends the record 'success'."
        ),
    )
    p.add_argument("leg", metavar="LEG", help="a leg name from matrix.toml")
    S.add_flag(p, S.OUT)
    S.add_flag(p, S.SIGNING_PFX)
    S.add_flag(p, S.SIGNING_CA)
    S.add_flag(p, S.WAIT_LOCK)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.leg.pack_staged import pack_leg
    from pipeline.util.console import make_console

    pack_leg(inputs, inputs.require_matrix().leg(args.leg), make_console(inputs.environ, stderr=False))
    return 0
