"""``python -m pipeline cache-budget``: the ccache each leg can keep within the repository's Actions caches."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.actions_cache.leg_budget import LegBudget, matrix_leg_budget
from pipeline.github import runner
from pipeline.github.limits import RELEASE_ASSET_LIMIT_BYTES
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.util.byte_sizes import human_bytes


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cache-budget",
        help="per leg, the ccache it can keep within [github] cache_limit_bytes; warns when too small",
        description=(
            "Every leg keeps [github] keep generations of its ccache in the repository's Actions caches "
            "(a ROCm leg one more with the Saturday warm-up, [rocm] warm_up; a leg with shards one shard set "
            "more, a cold build's objects until the pruner drops it), "
            "which GitHub evicts past [github] cache_limit_bytes. Prints each leg's share (below "
            "cache_warn_fraction of the limit) and warns when it is smaller than a warm build's cache "
            "([ccache] warm_size, the cpu leg's, measured) or when [ccache] max_size lets the caches outgrow "
            "the limit. With a run's output folder (--out) holding built bundles, also each bundle against "
            "GitHub's 2 GiB limit per release asset, warning from 80% of it. Offline: reads matrix.toml and "
            "the records only. Exit 0 either way."
        ),
    )
    S.add_flag(
        p, S.OUT, help="a run's output folder: its built bundles are set against GitHub's limit per asset"
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    plan = matrix_leg_budget(inputs.require_matrix())
    bundles = built_bundles(inputs.out)
    if args.json:
        data = plan.to_json()
        data["bundles"] = {
            leg: {"bundle": path.name, "bytes": path.stat().st_size} for leg, path in bundles.items()
        }
        data["release_asset_limit_bytes"] = RELEASE_ASSET_LIMIT_BYTES
        print(json.dumps(data, indent=2))
    else:
        shard_sets = f", {plan.shard_sets} shard sets" if plan.shard_sets else ""
        print(
            f"{len(plan.shares)} legs, {plan.caches} generations ({plan.keep} each"
            f"{_warm_extra(plan)}{shard_sets}) within {human_bytes(plan.usable_bytes)} "
            f"of {human_bytes(plan.limit_bytes)}; a warm build's ccache: {human_bytes(plan.warm_bytes)}"
        )
        for share in plan.shares:
            verdict = "warm" if share.fits else "too small for a warm build"
            extra = "  (+1 warm-up generation)" if share.generations > plan.keep else ""
            print(f"  {share.leg:<32} {human_bytes(share.share_bytes):>10}  {verdict}{extra}")
        if bundles:
            print(
                f"bundles in {inputs.out}, against GitHub's {human_bytes(RELEASE_ASSET_LIMIT_BYTES)} per release asset:"
            )
            for leg, path in bundles.items():
                size = path.stat().st_size
                print(f"  {leg:<32} {human_bytes(size):>10}  {size / RELEASE_ASSET_LIMIT_BYTES:.0%}")
    warnings = [*plan.warnings(), *(w for leg, path in bundles.items() if (w := asset_warning(leg, path)))]
    for warning in warnings:
        runner.annotate("warning", warning, env=inputs.environ, stream=sys.stderr)
    return 0


def _warm_extra(plan: LegBudget) -> str:
    warmed = sum(1 for s in plan.shares if s.generations > plan.keep)
    return f", one more for the {warmed} legs the warm-up compiles" if warmed else ""


def built_bundles(out: Path) -> dict[str, Path]:
    """The bundles the run's records name that exist (none when ``out`` holds no run)."""
    from pipeline.release.collect import bundle_path, read_results

    if not out.is_dir():
        return {}
    return {
        leg: path
        for leg, result in read_results(out).items()
        if result.bundle is not None and (path := bundle_path(out, result.bundle)).is_file()
    }


def asset_warning(leg: str, bundle: Path) -> str | None:
    """Near GitHub's limit per asset (from 80% of it), or over it: what publish will refuse."""
    from pipeline.bundle.asset_size import near_limit_warning, oversize_problem

    return oversize_problem(leg, bundle) or near_limit_warning(leg, bundle)
