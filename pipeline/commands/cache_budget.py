"""``python -m pipeline cache-budget``: the ccache each leg can keep within the repository's Actions caches."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pipeline.actions_cache.leg_budget import matrix_leg_budget
from pipeline.github import runner
from pipeline.inputs.run_inputs import RunInputs
from pipeline.util.byte_sizes import human_bytes


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cache-budget",
        help="per leg, the ccache it can keep within [github] cache_limit_bytes; warns when too small",
        description=(
            "Every leg keeps [github] keep generations of its ccache in the repository's Actions caches, "
            "which GitHub evicts past [github] cache_limit_bytes. Prints each leg's share (below "
            "cache_warn_fraction of the limit) and warns when it is smaller than a warm build's cache "
            "([ccache] warm_size, the cpu leg's, measured) or when [ccache] max_size lets the caches outgrow "
            "the limit. Offline: reads matrix.toml only. Exit 0 either way."
        ),
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    plan = matrix_leg_budget(inputs.require_matrix())
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
    else:
        print(f"{len(plan.shares)} legs x {plan.keep} generations within {human_bytes(plan.usable_bytes)} "
              f"of {human_bytes(plan.limit_bytes)}; a warm build's ccache: {human_bytes(plan.warm_bytes)}")
        for share in plan.shares:
            verdict = "warm" if share.fits else "too small for a warm build"
            print(f"  {share.leg:<32} {human_bytes(share.share_bytes):>10}  {verdict}")
    for warning in plan.warnings():
        runner.annotate("warning", warning, env=inputs.environ, stream=sys.stderr)
    return 0
