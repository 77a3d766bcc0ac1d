"""``python -m pipeline cache-key LEG``: the leg's Actions cache key and restore prefix."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline import github
from pipeline.cachekey import (
    cache_key,
    check_tag,
    key_toolchain,
    restore_keys,
    run_tag,
    toolchain_cache_key,
    toolchain_identity,
)
from pipeline.config import Matrix, load_matrix
from pipeline.options import LegOptions


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cache-key",
        help="print a leg's cache key and restore keys (and set them as step outputs on Actions)",
        description=(
            "The key carries the leg, its toolchain identity and the run's tag; the restore key stops "
            "right after the toolchain, so it only matches caches of the same leg and toolchain. On "
            "GitHub Actions the step outputs are key, restore-keys and ccache-dir, and for legs that "
            "download their toolchain, toolchain-key and toolchain-dir."
        ),
    )
    p.add_argument("leg", metavar="LEG", help="a leg of the matrix")
    p.add_argument("--tag", help="the run's tag, e.g. b10327 or b10327-mix-1a2b3c4 (default: the resolution's)")
    p.add_argument(
        "--toolchain",
        metavar="VERSION",
        help="the toolchain identity or version (default: the resolved ROCm version, or the detected compiler)",
    )
    p.add_argument(
        "--resolved",
        metavar="FILE_OR_JSON",
        help="the run's resolution (default: $PIPELINE_RESOLVED)",
    )
    p.add_argument("--json", action="store_true", help='print {"key": ..., "restore_keys": [...]}')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.ccache import default_cache_dir
    from pipeline.rocm.install import download_cache_dir

    matrix = load_matrix(args.matrix)
    leg = matrix.leg(args.leg)
    options = LegOptions(tag=check_tag(args.tag) if args.tag else None, resolved=args.resolved)
    tag = run_tag(matrix, options)
    if args.toolchain:
        # A bare ROCm version names the same toolchain the resolution would.
        given = args.toolchain
        if leg.backend == "rocm" and not given.startswith("rocm-"):
            given = f"rocm-{given}"
        toolchain = key_toolchain(given)
    else:
        toolchain = toolchain_identity(matrix, leg.name, options)
    key = cache_key(leg.name, toolchain, tag)
    restore = restore_keys(leg.name, toolchain)
    outputs = {
        "key": key,
        "restore-keys": "\n".join(restore),
        "ccache-dir": str(default_cache_dir(leg.name).resolve()),
        "toolchain": toolchain,
    }
    # Only a downloaded toolchain is worth an Actions cache of its own, and only when
    # it cannot push every leg's ccache out of the repository's budget (issue 17).
    if leg.backend == "rocm" and _archives_fit(matrix, options):
        outputs["toolchain-key"] = toolchain_cache_key(leg.name, toolchain)
        outputs["toolchain-dir"] = str(download_cache_dir().resolve())
    for name, value in outputs.items():
        github.set_output(name, value)
    if args.json:
        data: dict[str, Any] = {"key": key, "restore_keys": restore, "toolchain": toolchain}
        if "toolchain-key" in outputs:
            data["toolchain_key"] = outputs["toolchain-key"]
        print(json.dumps(data))
    else:
        print(f"key:          {key}")
        print(f"restore-keys: {', '.join(restore)}")
    return 0


def _archives_fit(matrix: Matrix, options: LegOptions) -> bool:
    import sys

    from pipeline.archive_budget import archive_decision

    decision = archive_decision(matrix, options)
    print(decision.reason, file=sys.stderr)
    return decision.cache_archives
