"""``python -m pipeline cache-save LEG``: trim the leg's ccache and decide whether to upload it (see :mod:`pipeline.ccache.save`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.github import runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cache-save",
        help="after a leg's build: evict stale ccache files and decide whether to save the cache",
        description=(
            "Evicts ccache files not used for [ccache] evict_older_than_days, then reads the leg's "
            "record and says whether the run added at least [ccache] save_min_new_entries entries. "
            "On GitHub Actions the answer is the step output save=true|false."
        ),
    )
    p.add_argument("leg", metavar="LEG", help="a leg of the matrix")
    S.add_flag(p, S.OUT)
    p.add_argument("--json", action="store_true", help="print the decision as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.ccache.save import decide_save, evict
    from pipeline.ccache.save_stats import save_inputs
    from pipeline.ccache.session import leg_ccache_dir

    matrix = inputs.require_matrix()
    leg = matrix.leg(args.leg)
    # A failed or timed-out build still has statistics: the record's, else its stats log.
    stats = save_inputs(inputs.out / leg.name)
    if stats.ccache_dir:
        ccache_dir = Path(stats.ccache_dir)
    else:
        ccache_dir = inputs.ccache_dir or leg_ccache_dir(inputs.cache_home, leg.name)

    # With --json, stdout carries only the JSON.
    with runner.group(
        f"ccache eviction ({leg.name})", stream=sys.stderr if args.json else None, env=inputs.environ
    ):
        evicted = evict(ccache_dir, matrix.ccache.evict_older_than_days, inputs.environ)
    decision = decide_save(stats.ccache, matrix.ccache.save_min_new_entries)
    runner.set_output("save", "true" if decision.save else "false", env=inputs.environ)
    if args.json:
        print(
            json.dumps(
                {
                    "leg": leg.name,
                    "save": decision.save,
                    "new_entries": decision.new_entries,
                    "reason": decision.reason,
                    "ccache_dir": str(ccache_dir),
                    "evicted": evicted,
                }
            )
        )
    else:
        if evicted:
            print(evicted)
        print(f"{leg.name}: {'save' if decision.save else 'do not save'} the cache: {decision.reason} "
              f"(from {stats.origin})")  # fmt: skip
    return 0
