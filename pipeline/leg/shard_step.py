"""A shard of a leg's cold build, and the leg's build taking the shards in.

``python -m pipeline shard LEG --index I`` runs the leg's own steps up to
CMake's configure (the same source, toolchain, flags and ccache settings),
then :func:`shard_plan_step`: Ninja's plan of the configured tree gives the
compile steps (:mod:`pipeline.ccache.shards`), the shard takes its part and
the build step compiles only that, into the shard's ccache folder
(:func:`pipeline.ccache.shard_caches.shard_cache_dir`). Nothing is linked or
bundled; the record says ``sharded``.

A shard run is a run of its own: its output folder is
``<out>/<leg>--shard-<i>of<n>`` (its record, log, tree and build folder
there, never where ``publish`` or ``report`` look for a leg's record) and its
cache is the shard's. The tree sits at the same place inside its folder as a
leg's (``<work>/src/llama.cpp``, ``<work>/build``), so with ccache's
``base_dir`` at the workspace every compile command hashes as the leg's own.

The leg's build (any run of a leg with ``shards``) first merges the shard
folders it finds into its cache (:func:`merge_shards`), then builds as usual.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

from pipeline.ccache.session import CcacheSetup
from pipeline.ccache.shard_caches import merge_shard_caches
from pipeline.ccache.shards import (
    SHARD_TARGET,
    compile_steps,
    estimated_cost,
    shard_ninja_file,
    split_steps,
    with_sizes,
)
from pipeline.errors import BuildError
from pipeline.inputs.leg import Leg, ShardSpec, leg_shards
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg import console_lines as render
from pipeline.leg.context import LegContext
from pipeline.leg.step_results import BuildPlan
from pipeline.processes.groups import run_child

# The shard's Ninja file, written into the build folder beside CMake's build.ninja.
SHARD_NINJA = "pipeline-shard.ninja"


def shard_out(out: Path, leg: str, shard: ShardSpec) -> Path:
    """The output folder of a shard run: ``<out>/<leg>--shard-<i>of<n>`` (no leg's name has ``--``)."""
    return out / f"{leg}--shard-{shard.label}"


def shard_inputs(inputs: RunInputs, leg: Leg, shard: ShardSpec) -> RunInputs:
    """The run's inputs for a shard run: its own output folder and the shard's ccache folder."""
    from pipeline.ccache.session import leg_ccache_dir
    from pipeline.ccache.shard_caches import shard_cache_dir

    # Resolved as cache-key resolves it: the folder the workflow saves is the one this run fills.
    leg_cache = (inputs.ccache_dir or leg_ccache_dir(inputs.cache_home, leg.name)).resolve()
    return dataclasses.replace(
        inputs, out=shard_out(inputs.out, leg.name, shard), ccache_dir=shard_cache_dir(leg_cache, shard)
    )


def _ninja(build: Path, *args: str) -> str:
    from pipeline.leg.tools import find_tool

    cmd = [str(find_tool("ninja")), "-C", str(build), *args]
    try:
        proc = run_child(cmd, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"ninja {' '.join(args)} in {build}: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise BuildError(
            f"ninja {' '.join(args)} in {build} failed: {detail[-1] if detail else proc.returncode}"
        )
    return str(proc.stdout)


def _source_size(source: str, build: Path) -> int:
    path = Path(source) if Path(source).is_absolute() else build / source
    try:
        return path.stat().st_size
    except OSError:
        return 0


def shard_plan_step(ctx: LegContext, previous: BuildPlan) -> BuildPlan:
    """This shard's part of the configured leg's compile steps, as a Ninja file and target for the build step."""
    shard = ctx.options.shard
    if shard is None:
        raise AssertionError("the shard plan step runs in a shard run only")
    plan = previous
    try:
        compdb = json.loads(_ninja(plan.build, "-t", "compdb"))
        steps = compile_steps(compdb, str(plan.ccache.executable), windows=ctx.leg.os == "windows")
    except ValueError as exc:
        raise BuildError(f"{ctx.leg.name}: Ninja's plan in {plan.build} cannot be read: {exc}") from None
    if not steps:
        raise BuildError(
            f"{ctx.leg.name}: no compile step of Ninja's plan in {plan.build} goes through "
            f"{plan.ccache.executable}: nothing to shard"
        )
    steps = with_sizes(steps, {s.source: _source_size(s.source, plan.build) for s in steps})
    part = split_steps(steps, shard.count)[shard.index - 1]
    share = sum(map(estimated_cost, part)) / max(1, sum(map(estimated_cost, steps)))
    (plan.build / SHARD_NINJA).write_text(
        shard_ninja_file([s.output for s in part], label=f"{ctx.leg.name} {shard.label}"), encoding="utf-8"
    )
    render.note(
        ctx.console,
        ctx.leg.name,
        f"shard {shard.index} of {shard.count}: {len(part)} of the leg's {len(steps)} compile steps "
        f"({share:.0%} of the estimated work) into {plan.ccache.ccache_dir}",
    )
    detail: dict[str, Any] = {
        "index": shard.index,
        "count": shard.count,
        "steps": len(part),
        "leg_steps": len(steps),
        "estimated_share": round(share, 4),
    }
    return dataclasses.replace(plan, ninja_args=("-f", SHARD_NINJA, SHARD_TARGET), shard=detail)


def merge_shards(ctx: LegContext, ccache: CcacheSetup) -> dict[str, Any] | None:
    """A leg with shards: the shard caches found beside its own merged into it (None: none found; a shard run or
    a configure-only run, which compiles nothing of the leg's, merges nothing and leaves them for the build)."""
    if ctx.options.shard is not None or ctx.options.configure_only or ctx.leg.shards < 2:
        return None
    merged = merge_shard_caches(
        ccache.ccache_dir,
        leg_shards(ctx.leg),
        ccache=ccache.executable,
        env={**ctx.inputs.environ, **ccache.env(with_stats_log=False)},
    )
    if merged is None:
        return None
    render.note(
        ctx.console,
        ctx.leg.name,
        f"merged shards {', '.join(merged.shards)} into {ccache.ccache_dir}: {merged.added} entries added, "
        f"{merged.already_there} already there",
    )
    return merged.to_record()
