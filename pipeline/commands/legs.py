"""``python -m pipeline legs``: list the legs of the matrix (``--json``: one object per leg)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline.backends import leg_description
from pipeline.errors import UsageError
from pipeline.github.runner import log_text
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import is_safe_tag


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "legs",
        help="list the legs declared in the matrix",
        description=(
            "One line per leg; with --json one object per leg: name, backend, os, arch, runner, targets "
            "(GPU targets or CUDA architectures), toolkit (the pinned toolchain version, or what the run "
            "resolves or the runner has), bundle (its file name for --tag) and disabled (why a declared leg "
            "is not built, or null). Offline: reads matrix.toml only, installs nothing."
        ),
    )
    p.add_argument("--json", action="store_true", help="print a JSON array, one object per leg")
    p.add_argument(
        "--tag",
        metavar="TAG",
        help="the tag the bundle names are made for (default: matrix.toml's [source] tag)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    matrix = inputs.require_matrix()
    tag = args.tag or matrix.source.tag
    if not is_safe_tag(tag):
        raise UsageError(f"--tag {tag!r}: expected a tag that can name a file, like 'b1234'")
    rows = [leg_description(matrix, leg, tag=tag) for leg in matrix.declared_legs]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            targets = f" targets={';'.join(row['targets'])}" if row["targets"] else ""
            # The reason is matrix.toml's free text: on Actions escaped (a newline would start a command).
            print(
                f"{row['name']}\t{row['backend']}\t{row['os']}/{row['arch']}\t{row['runner']}\t"
                f"{row['toolkit']}{targets}\t{row['bundle']}"
                + (f"\tdisabled: {log_text(row['disabled'], inputs.environ)}" if row["disabled"] else "")
            )
    return 0
