"""``python -m pipeline cache-key LEG``: the leg's Actions cache key and restore prefix."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline.actions_cache.cache_keys import (
    cache_key,
    check_run_tag,
    restore_keys,
    shard_cache_key,
    toolchain_cache_key,
)
from pipeline.github import runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cache-key",
        help="print a leg's cache key and restore keys (and set them as step outputs on Actions)",
        description=(
            "The key carries the leg, its toolchain identity and the run's tag; the restore key stops "
            "right after the toolchain, so it only matches caches of the same leg and toolchain. A "
            "warm-up's resolution (warm-up) ends the key in '-warm'. On "
            "GitHub Actions the step outputs are key, restore-keys and ccache-dir, and for legs that "
            "download their toolchain, toolchain-key and toolchain-dir. A leg with shards = N also gets "
            "shard-key-<i> and shard-dir-<i> for each shard (the exact key and the folder of its cache), and "
            "with --shard I, shard-key and shard-dir for that one."
        ),
    )
    p.add_argument("leg", metavar="LEG", help="a leg of the matrix")
    p.add_argument(
        "--tag",
        dest="run_tag",
        help="the run's tag, e.g. b10327 or b10327-mix-1a2b3c4 (default: the resolution's)",
    )
    p.add_argument(
        "--toolchain",
        metavar="VERSION",
        help="the toolchain identity or version (default: the resolved ROCm version, or the detected compiler)",
    )
    p.add_argument(
        "--shard",
        type=int,
        metavar="I",
        help="also the key and folder of this shard's cache (outputs shard-key, shard-dir)",
    )
    S.add_flag(p, S.RESOLVED)
    S.add_flag(p, S.ROCM_PATH)
    p.add_argument("--json", action="store_true", help='print {"key": ..., "restore_keys": [...]}')
    p.set_defaults(func=run, reads_resolution=True)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.actions_cache.leg_identity import given_toolchain, run_tag_for_key, toolchain_identity
    from pipeline.backends import backend_of
    from pipeline.ccache.session import leg_ccache_dir
    from pipeline.ccache.shard_caches import shard_cache_dir
    from pipeline.inputs.leg import leg_shards, shard_spec
    from pipeline.run_resolution import leg_rocm

    leg = inputs.require_matrix().leg(args.leg)
    # A bad --shard is refused before anything is resolved.
    chosen = shard_spec(leg, args.shard) if args.shard is not None else None
    tag = check_run_tag(args.run_tag) if args.run_tag else run_tag_for_key(inputs)
    if args.toolchain:
        toolchain = given_toolchain(leg, args.toolchain)
    else:
        # Resolved first (from the run's resolution when it names one): the identity is computed from the answer.
        # An installed ROCm (--rocm-path) is the identity its builds' records carry: no TheRock build is resolved.
        rocm = leg_rocm(inputs, leg, rocm_path=inputs.rocm_path)
        toolchain = toolchain_identity(inputs, leg, rocm=rocm)
    # A warm-up's run (its resolution says so) saves under its own key, for the next window's first night.
    warm = inputs.resolution is not None and inputs.resolution.warm_up is not None
    key = cache_key(leg.name, toolchain, tag, warm=warm)
    restore = restore_keys(leg.name, toolchain)
    ccache_dir = (inputs.ccache_dir or leg_ccache_dir(inputs.cache_home, leg.name)).resolve()
    outputs = {
        "key": key,
        "restore-keys": "\n".join(restore),
        "ccache-dir": str(ccache_dir),
        "toolchain": toolchain,
    }
    # Each shard's cache: restored by its exact key into its own folder (the leg's build merges them).
    shards = {
        shard.index: (
            shard_cache_key(leg.name, toolchain, tag, shard.index, shard.count),
            shard_cache_dir(ccache_dir, shard),
        )
        for shard in leg_shards(leg)
    }
    for index, (shard_key, folder) in shards.items():
        outputs[f"shard-key-{index}"], outputs[f"shard-dir-{index}"] = shard_key, str(folder)
    if chosen is not None:
        outputs["shard-key"], outputs["shard-dir"] = (
            outputs[f"shard-key-{chosen.index}"],
            outputs[f"shard-dir-{chosen.index}"],
        )
    # Only a downloaded toolchain whose identity is known before it is installed (a resolved ROCm
    # build) is worth an Actions cache of its own, and only when
    # it cannot push every leg's ccache out of the repository's budget.
    if backend_of(leg).downloads_toolchain and leg.needs_resolution and _archives_fit(inputs):
        outputs["toolchain-key"] = toolchain_cache_key(leg.name, toolchain)
        outputs["toolchain-dir"] = str(inputs.download_cache.resolve())
    for name, value in outputs.items():
        runner.set_output(name, value, env=inputs.environ)
    if args.json:
        data: dict[str, Any] = {"key": key, "restore_keys": restore, "toolchain": toolchain}
        if "toolchain-key" in outputs:
            data["toolchain_key"] = outputs["toolchain-key"]
        if shards:
            data["shard_keys"] = [shard_key for shard_key, _ in shards.values()]
        print(json.dumps(data))
    else:
        print(f"key:          {key}")
        print(f"restore-keys: {', '.join(restore)}")
        for index, (shard_key, _) in shards.items():
            print(f"shard {index}:{' ' * (6 - len(str(index)))}{shard_key}")
    return 0


def _archives_fit(inputs: RunInputs) -> bool:
    import sys

    from pipeline.actions_cache.archive_budget import archive_decision
    from pipeline.run_resolution import rocm_archive_urls

    decision = archive_decision(inputs, lambda: rocm_archive_urls(inputs))
    print(decision.reason, file=sys.stderr)
    return decision.cache_archives
