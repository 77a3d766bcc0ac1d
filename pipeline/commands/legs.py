"""``python -m pipeline legs``: list the legs of the matrix."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("legs", help="list the legs declared in the matrix")
    p.add_argument("--json", action="store_true", help="print a JSON array of leg names")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    matrix = inputs.require_matrix()
    if args.json:
        print(json.dumps(list(matrix.legs)))
    else:
        for leg in matrix.legs.values():
            extra = f" family={leg.family} targets={';'.join(leg.targets)}" if leg.family else ""
            print(f"{leg.name}\t{leg.backend}\t{leg.os}{extra}")
    return 0
