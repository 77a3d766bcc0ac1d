"""``python -m pipeline matrix --github``: the legs as a GitHub ``strategy.matrix``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from pipeline.errors import UsageError
from pipeline.github import runner
from pipeline.inputs import settings as S
from pipeline.inputs.matrix import Matrix
from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "matrix",
        help="print the legs as the JSON of a GitHub Actions strategy.matrix",
        description=(
            "One entry per leg: its name, Nox session, runner label, OS, arch, backend and GitHub environment "
            "(release-signing for a leg [signing] covers). On GitHub "
            "Actions the JSON is also written to the step output 'matrix', the shard jobs' (one entry per "
            "shard of each selected leg with shards = N: leg, shard, of, runner, os, arch, backend) to "
            "'shards', and with --resolved the run's resolution to the output 'resolved'."
        ),
    )
    p.add_argument("--github", action="store_true", help="the strategy.matrix form ({'include': [...]})")
    S.add_flag(p, S.LEGS)
    S.add_flag(
        p,
        S.RESOLVED,
        help="the run's resolution, also handed on as the step output 'resolved' (compact JSON)",
    )
    p.set_defaults(func=run, reads_resolution=True)


# The GitHub environment holding the signing secrets (nightly.yml's sign step reads them).
SIGNING_ENVIRONMENT = "release-signing"


def select_legs(matrix: Matrix, wanted: Sequence[str]) -> list[str]:
    """The legs named in ``wanted`` (matrix order), all when empty; unknown names fail."""
    for name in wanted:
        matrix.leg(name)
    return [name for name in matrix.legs if not wanted or name in wanted]


def github_matrix(matrix: Matrix, legs: list[str]) -> dict[str, Any]:
    """``{"include": [...]}``: one entry per leg; the leg name is also its session name."""
    include = []
    for name in legs:
        leg = matrix.legs[name]
        include.append(
            {
                "leg": name,
                "session": name,
                "runner": leg.runner,
                "os": leg.os,
                "arch": leg.arch,
                "backend": leg.backend,
                # The job's GitHub environment: the signing secrets' for a leg the release signs, else none.
                "environment": SIGNING_ENVIRONMENT if matrix.signing.covers(leg) else "",
            }
        )
    return {"include": include}


def shard_matrix(matrix: Matrix, legs: list[str]) -> dict[str, Any]:
    """``{"include": [...]}``: one entry per shard of each of ``legs`` that has shards (none: an empty list)."""
    from pipeline.inputs.leg import leg_shards

    include = [
        {
            "leg": name,
            "shard": shard.index,
            "of": shard.count,
            "runner": matrix.legs[name].runner,
            "os": matrix.legs[name].os,
            "arch": matrix.legs[name].arch,
            "backend": matrix.legs[name].backend,
        }
        for name in legs
        for shard in leg_shards(matrix.legs[name])
    ]
    return {"include": include}


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    matrix = inputs.require_matrix()
    legs = select_legs(matrix, S.pick(S.LEGS, flag=args.legs, environ=inputs.environ).value)
    if not legs:
        raise UsageError(f"no legs selected from {matrix.path}")
    if not args.github:
        print(json.dumps(legs))
        return 0
    text = json.dumps(github_matrix(matrix, legs), separators=(",", ":"))
    print(text)
    runner.set_output("matrix", text, env=inputs.environ)
    # Always a valid matrix: the workflow runs the shard job only when it names a leg.
    runner.set_output(
        "shards", json.dumps(shard_matrix(matrix, legs), separators=(",", ":")), env=inputs.environ
    )
    if inputs.resolution is not None:
        compact = json.dumps(inputs.resolution.to_json(), separators=(",", ":"), sort_keys=True)
        runner.set_output("resolved", compact, env=inputs.environ)
    return 0
