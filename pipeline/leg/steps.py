"""One leg: source tree -> toolchain -> preflight -> ccache -> CMake configure -> Ninja build -> bundle -> check.

Every step is ``step(ctx, previous)``: the :class:`~pipeline.leg.context.LegContext`
and the previous step's result; what the steps print is :mod:`pipeline.leg.console_lines`.

The build directory is fresh every run (``<out>/<leg>/build``): a warm run
is warm because of ccache, never because of a stale tree. One run at a time
writes a leg's folder (an OS lock), and its record always says how the run
stands: running, success, failed or interrupted. The full log of the
configure and the build (CMake's and Ninja's output) goes to ``<out>/<leg>/build.log``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from pipeline.ccache.glslc_serving import serving_glslc
from pipeline.ccache.session import (
    CcacheSetup,
    leg_ccache_dir,
    record_cache_toolchain,
    remote_spec,
    setup_ccache,
    take_warm_up,
    with_glslc_cache,
    workspace_of,
)
from pipeline.errors import BuildError, PipelineError
from pipeline.inputs.leg import Leg
from pipeline.inputs.matrix import Matrix
from pipeline.inputs.resolution_file import LegResolution
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg import console_lines as render
from pipeline.leg.bundle_steps import bundle_step, check_step
from pipeline.leg.context import LegContext, Step
from pipeline.leg.options import LegOptions
from pipeline.leg.progress import NINJA_STATUS, NinjaProgress
from pipeline.leg.shard_step import merge_shards, shard_plan_step
from pipeline.leg.source_step import check_cmake_project, source_step
from pipeline.leg.step_results import BaseBuild, BuildPlan, LegRun, Packaged, Prepared, SourceTree
from pipeline.leg.tools import find_tool as find_tool
from pipeline.leg.warm_up_note import note_leg_warm_up, warm_up_text
from pipeline.processes.groups import run_logged
from pipeline.redaction import redact, secrets_in
from pipeline.results.ninjalog import timings_for_build
from pipeline.results.record import RECORD_NAME, LegRecord, leg_lock
from pipeline.toolchain.prefixmap import prefix_map_flags, with_prefix_map
from pipeline.toolchain.toolchain import Toolchain
from pipeline.util.tree_removal import remove_aside

# A leg with a base builds that configuration here, beside its own ``build``.
BASE_BUILD = "build-base"


def leg_dir(out: Path, leg: str) -> Path:
    return out / leg


def cmake_arguments(
    matrix: Matrix,
    leg: Leg,
    toolchain: Toolchain,
    ccache: CcacheSetup,
    source_tree: Path,
    build: Path,
    build_info: Sequence[str] = (),
) -> list[str]:
    """The configure line: llama.cpp's build number and commit, shared flags, the leg's, the toolchain's,
    then ccache launchers (``build_info``: :func:`pipeline.source.build_info.build_info_args`)."""
    launchers = [
        f"-DCMAKE_{lang}_COMPILER_LAUNCHER={ccache.executable}"
        for lang in ("C", "CXX", *toolchain.launcher_languages)
    ]
    args = [
        "-G",
        "Ninja",
        "-S",
        str(source_tree),
        "-B",
        str(build),
        # First: a matrix.toml that sets them itself is taken at its word (CMake keeps the last -D).
        *build_info,
        *matrix.cmake_args,
        *leg.cmake_args,
        *toolchain.cmake_args,
        *launchers,
        # After the toolchain's: glslc through the shader cache (CMake keeps the last -D).
        *(ccache.glslc.cmake_args() if ccache.glslc else ()),
    ]
    # The build's folders mapped to "." in every compiler's output: the same bundle from any folder (not with
    # MSVC, which takes no such flag).
    maps = prefix_map_flags(ccache.base_dir, source_tree, build) if toolchain.prefix_map else []
    # A leg builds on its own OS: quoted for Windows' command lines there, for the shell elsewhere.
    return with_prefix_map(
        args, ("C", "CXX", *toolchain.launcher_languages), maps, windows=leg.os == "windows"
    )


def run_leg(
    inputs: RunInputs,
    leg: Leg,
    options: LegOptions,
    console: Console,
    *,
    resolve: Callable[[], LegResolution],
    provenance: Mapping[str, Any] | None = None,
) -> LegRun:
    """Build one leg: source, toolchain, preflight, ccache, configure, build, bundle, check.

    ``resolve`` settles the leg's TheRock build and source, once, before the
    first step and after the record says ``running`` (an index that is down
    fails the run on record); the command passes it
    (:func:`pipeline.run_resolution.resolve_leg`), so no step of the leg
    reaches an index.

    One run at a time: the leg's output folder is locked for the whole run
    (BusyError naming the holder, or a wait of ``--wait-lock``). The record
    says ``running`` before any work and ends ``success``, ``failed`` or
    ``interrupted`` (Ctrl-C, SIGTERM: the child process tree is stopped first).
    Raises BuildError when CMake or Ninja fails (the record says ``failed``).
    ``provenance``: what the record's source says beyond the tree itself (a
    reproduction names the original's repository, tag and mix).
    """
    matrix = inputs.require_matrix()
    # The settings a build reads later (read when used, so other commands ignore them): a bad one
    # is refused here, before the lock, the record or any work.
    _ = (inputs.wait_lock, inputs.heartbeat, inputs.retry, inputs.git_url_template)
    clock = time.monotonic()
    out = inputs.out.resolve()
    work = leg_dir(out, leg.name)
    check_remote_spec(matrix, options)
    if options.source_tree is not None:
        # A wrong --source is the user's typo: refused here, before anything is written, and only here
        # (the source step takes the folder as checked).
        check_cmake_project(options.source_tree)
    from pipeline.processes.locks import hold

    work.mkdir(parents=True, exist_ok=True)
    with hold(
        leg_lock(work), what=f"the output folder {work}", since=inputs.started, wait_seconds=inputs.wait_lock
    ):
        record = LegRecord(
            leg=leg.name,
            backend=leg.backend,
            os=leg.os,
            arch=leg.arch,
            # The real moment, even when replaying an earlier --now.
            started=inputs.started.isoformat(timespec="seconds"),
            status="running",
        )
        # Before any work: an earlier run's success must not stand beside this run's half-built tree.
        record.write(work / RECORD_NAME)
        # Nor an earlier run's ccache statistics (cache-save reads this log when there is no finished record).
        (work / "ccache-stats.log").unlink(missing_ok=True)
        ctx: LegContext | None = None
        try:
            ctx = LegContext(
                inputs=inputs,
                leg=leg,
                options=options,
                work=work,
                record=record,
                console=console,
                resolution=resolve(),
                provenance=provenance or {},
            )
            return _run_steps(ctx, clock=clock)
        except KeyboardInterrupt:
            # Not waited for: an interrupt ends the run now (the next run removes what is left).
            record.status = "interrupted"
            record.wall_seconds = round(time.monotonic() - clock, 3)
            record.write(work / RECORD_NAME)
            raise
        except BaseException as exc:
            if ctx is not None:
                _finish_pending(ctx)
            if record.status == "running":
                record_failure(record, exc, inputs.environ)
                record.wall_seconds = round(time.monotonic() - clock, 3)
                record.write(work / RECORD_NAME)
            raise


def record_failure(record: LegRecord, exc: BaseException, environ: Mapping[str, str]) -> None:
    """The record of a run that ``exc`` ended: ``failed``, with the error line and its exit code (a
    PipelineError's), redacted: alert quotes it in an issue, and no token or URL credential goes with it."""
    record.status = "failed"
    if isinstance(exc, PipelineError):
        record.error = redact(exc.message, secrets_in(environ))
        record.exit_code = exc.exit_code


def _run_steps(ctx: LegContext, *, clock: float) -> LegRun:
    """The chain is :data:`STEPS`: each step is called with the context and the previous step's result.

    Every step's wall time goes into the record's ``phases`` under its name (``source``, ``toolchain``,
    ``preflight``, ``ccache``, ``configure``, ``build``, ``bundle``, ``check``); configure and build time
    their command themselves, and ``package`` is the bundle step's archive writing."""
    result: Any = None
    if ctx.options.configure_only:
        steps = STEPS[: STEPS.index(configure_step) + 1]
    elif ctx.options.shard is not None:
        steps = SHARD_STEPS
    elif ctx.options.warm_up:
        steps = STEPS[: STEPS.index(build_step) + 1]
    else:
        steps = STEPS
    for step in steps:
        started = time.monotonic()
        result = step(ctx, result)
        ctx.record.phases.setdefault(
            step.__name__.removesuffix("_step"), round(time.monotonic() - started, 3)
        )
    unbundled = ctx.options.configure_only or ctx.options.shard is not None or ctx.options.warm_up
    packaged: Packaged = Packaged(plan=result, bundle=None) if unbundled else result
    plan, bundle = packaged.plan, packaged.bundle
    record = ctx.record
    _finish_pending(ctx)
    if ctx.options.warm_up:
        note_leg_warm_up(ctx, plan)
    # A configure-only run is no release's: publish and cache-save take only a "success". A staged one
    # becomes a success when `pack` has made and checked its signed bundle. A shard run ends "sharded", a
    # warm-up's "warmed".
    ends = {
        "configured": ctx.options.configure_only,
        "sharded": ctx.options.shard is not None,
        "warmed": ctx.options.warm_up,
        "staged": packaged.staged,
    }
    record.status = next((status for status, said in ends.items() if said), "success")
    record.wall_seconds = round(time.monotonic() - clock, 3)
    record.write(ctx.work / RECORD_NAME)
    render.show_record(record, ctx.console)
    return LegRun(toolchain=plan.toolchain, build_dir=plan.build, record=record, bundle=bundle)


def _finish_pending(ctx: LegContext) -> None:
    """Wait for the background work of the run (the old build folder's removal); what it could not
    remove is a warning on record, not a failure: the build used a fresh folder all the same."""
    while ctx.pending:
        removal = ctx.pending.pop()
        for err in removal.wait():
            ctx.warn(
                f"could not remove the earlier build folder {err.filename or removal.paths[0]}: {err.strerror}; "
                "it is left in place"
            )


def check_remote_spec(matrix: Matrix, options: LegOptions) -> None:
    """A bad remote cache URL fails before any work (a clone, a toolchain download)."""
    spec, where = remote_spec(matrix.ccache, options.remote_cache)
    if spec:
        from pipeline.ccache.remote import parse_remote

        parse_remote(spec, where=where)


def toolchain_step(ctx: LegContext, previous: SourceTree) -> Prepared:
    """The leg's toolchain; a ROCm leg's is the TheRock build resolved before the steps (``ctx.resolution``)."""
    from pipeline.backends import prepare_toolchain, toolchain_request

    options = ctx.options
    request = toolchain_request(
        ctx.inputs,
        ctx.leg,
        rocm=ctx.resolution.rocm,
        rocm_path=options.rocm_path,
        cuda_path=options.cuda_path,
        vulkan_sdk=options.vulkan_sdk,
    )
    stale = None
    if request.rocm is not None:
        from pipeline.rocm.staleness import check_stale

        # Before the download: with rocm.stale = "fail" a stale build is never installed.
        stale = check_stale(
            request.rocm,
            ctx.inputs.now,
            max_age_days=ctx.inputs.rocm_max_age_days,
            action=ctx.inputs.rocm_stale,
        )
        if stale is not None:
            ctx.warn(stale)
    toolchain = prepare_toolchain(request, ctx.console)
    ctx.record.toolchain = toolchain.to_record()
    if stale is not None:
        # Where the report reads it (a row's warning), beside the build it is about.
        ctx.record.toolchain["stale"] = stale
    base = None
    if ctx.leg.base is not None:
        # The base leg's own toolchain (a cpu leg's: the host compiler), as its own run would prepare it.
        base_leg = ctx.matrix.all_legs[ctx.leg.base]
        base = BaseBuild(
            leg=base_leg, toolchain=prepare_toolchain(toolchain_request(ctx.inputs, base_leg), ctx.console)
        )
        ctx.record.toolchain["base"] = {"leg": base_leg.name, **base.toolchain.to_record()}
    return Prepared(source=previous, toolchain=toolchain, base=base)


def preflight_step(ctx: LegContext, previous: Prepared) -> Prepared:
    """Before any build folder exists: the toolchain against what the tree requires (:mod:`pipeline.leg.preflight`);
    a too-old HIP or Vulkan headers stop the leg here with one line."""
    from pipeline.leg.preflight import preflight

    toolchain = preflight(ctx.leg.name, previous.toolchain, previous.source.path, ctx.console)
    if toolchain is previous.toolchain:
        return previous
    ctx.record.toolchain = {**toolchain.to_record(), **_base_record(ctx)}
    return Prepared(source=previous.source, toolchain=toolchain, base=previous.base)


def _base_record(ctx: LegContext) -> dict[str, Any]:
    """The record's ``toolchain.base`` as the toolchain step wrote it (kept when a later step rewrites the rest)."""
    base = ctx.record.toolchain.get("base")
    return {"base": base} if base is not None else {}


def ccache_step(ctx: LegContext, previous: Prepared) -> BuildPlan:
    """The leg's ccache (settings, remote storage, compiler check) and a fresh build folder."""
    from pipeline.ccache.compiler_check import CompilerCheck, resolve_compiler_check

    source, toolchain = previous.source, previous.toolchain
    build = ctx.work / "build"
    config = ctx.matrix.ccache
    check = resolve_compiler_check(config.compiler_check, toolchain)
    if previous.base is not None and check.value.startswith("string:"):
        # One setting covers both builds, and the base's compilers are not in the toolchain's verified archive.
        check = CompilerCheck(mode=check.mode, value="content",
                              note="compiler_check=toolchain fell back to content: the base build's compilers "
                              "are not the toolchain's")  # fmt: skip
    ccache = setup_ccache(
        config,
        leg=ctx.leg.name,
        workspace=workspace_of(source.path, build),
        stats_log=ctx.work / "ccache-stats.log",
        ccache_dir=ctx.inputs.ccache_dir or leg_ccache_dir(ctx.inputs.cache_home, ctx.leg.name),
        remote=ctx.options.remote_cache,
        check_value=check.value if check.value != check.mode else None,
        check_note=check.note,
    )
    base = previous.base
    if base is not None:
        base = replace(base, build=ctx.work / BASE_BUILD)
    for folder in (build, *([base.build] if base is not None and base.build is not None else [])):
        if folder.exists() or folder.is_symlink():
            # Moved aside and removed while CMake runs (never through a link, never into a mount):
            # the new build folder is fresh at once.
            ctx.pending.append(remove_aside(folder))
        folder.mkdir(parents=True)
        build_tmp(folder).mkdir()
    ccache = with_glslc_cache(ccache, toolchain.cmake_args, build)
    if ccache.glslc is not None and ccache.glslc.client_problem is not None:
        render.note(
            ctx.console,
            ctx.leg.name,
            f"{ccache.glslc.client_problem}: shaders go through the Python "
            "launcher (one interpreter per glslc call)",
        )
    for warning in ccache.remote_check.warnings if ccache.remote_check else ():
        ctx.warn(warning)
    if ccache.check_note:
        render.note(ctx.console, ctx.leg.name, ccache.check_note)
    previous_toolchain = record_cache_toolchain(ccache.ccache_dir, toolchain.identity)
    # Before the build adds to the cache: whether a warm-up filled it (a warm-up's own run starts a new note).
    warmed_by = take_warm_up(ccache.ccache_dir, toolchain.identity)
    render.header(ctx.console, ctx.leg.name, toolchain, ccache)
    if warmed_by is not None:
        render.note(ctx.console, ctx.leg.name, f"ccache warmed ahead by {warm_up_text(warmed_by)}")
    # A leg with shards takes in the shard caches beside its own (restored by the workflow) before it compiles.
    merged = merge_shards(ctx, ccache)
    return BuildPlan(
        source=source,
        toolchain=toolchain,
        ccache=ccache,
        build=build,
        previous_toolchain=previous_toolchain,
        warmed_by=warmed_by,
        base=base,
        shards_merged=merged,
    )


def _build_info(plan: BuildPlan) -> list[str]:
    """What the programs print as their build and commit: the resolution's, not git's answer in the folder."""
    from pipeline.source.build_info import build_info_args

    return build_info_args(plan.source.tag, plan.source.info.get("commit"))


def build_tmp(build: Path) -> Path:
    """The temporary folder of CMake's and Ninja's processes: inside the build folder, so what the compilers
    leave there (Debian 12's clang an empty folder per HIP input and compile, an interrupted nvcc its
    intermediates) goes with the build folder instead of filling the machine's /tmp, build after build."""
    return build / "tmp"


def _base_env(
    ctx: LegContext, plan: BuildPlan, toolchain: Toolchain | None = None, build: Path | None = None
) -> dict[str, str]:
    """The environment of CMake and Ninja for ``build`` with ``toolchain`` (the plan's own by default)."""
    env = {
        **ctx.inputs.environ,
        **(toolchain or plan.toolchain).env,
        "NINJA_STATUS": NINJA_STATUS,
        "TMPDIR": str(build_tmp(build or plan.build)),
    }
    if _build_info(plan) or plan.source.outside_git:
        # ggml's CMakeLists.txt compiles `git rev-parse --short HEAD` (and "-dirty") into libggml-base
        # (ggml_commit()), and llama.cpp's git-vars.cmake asks git too. Above an unpacked archive git
        # would answer for the pipeline's own checkout (the wrong project, changing with every pipeline
        # commit); in a clone it answers for the clone, so an archive build and its `reproduce` from a
        # clone would differ. With no repository to find, every build of the run's source says the
        # same ("unknown" for ggml); the programs' build number and commit are the resolution's.
        env["GIT_DIR"] = os.devnull
    return env


def configure_step(ctx: LegContext, previous: BuildPlan) -> BuildPlan:
    """CMake's configure, into a new ``build.log``: the base's configuration first, for a leg with a ``base``."""
    plan, record = previous, ctx.record
    t0 = time.monotonic()
    ctx.log.write_text("", encoding="utf-8")
    try:
        base = plan.base
        if base is not None and base.build is not None:
            base_args = cmake_arguments(ctx.matrix, base.leg, base.toolchain, plan.ccache, plan.source.path,
                                        base.build, _build_info(plan))  # fmt: skip
            record.toolchain.setdefault("base", {})["cmake_args"] = base_args
            _configure(
                ctx, plan, base_args, base.toolchain, base.build, f"CMake configure of {base.leg.name}"
            )
        args = cmake_arguments(
            ctx.matrix, ctx.leg, plan.toolchain, plan.ccache, plan.source.path, plan.build, _build_info(plan)
        )
        record.cmake_args = args
        _configure(ctx, plan, args, plan.toolchain, plan.build, "CMake configure")
    finally:
        record.phases["configure"] = round(time.monotonic() - t0, 3)
    return plan


def _configure(
    ctx: LegContext, plan: BuildPlan, args: list[str], toolchain: Toolchain, build: Path, what: str
) -> None:
    """One CMake configure, appended to ``build.log``; a failure fails the leg naming ``what``."""
    cmd = [str(find_tool("cmake")), *args, f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}"]
    env = {**_base_env(ctx, plan, toolchain, build), **plan.ccache.env(with_stats_log=False)}
    with (
        ctx.log.open("a", encoding="utf-8") as log,
        ctx.console.status(f"{ctx.record.leg}: configuring with CMake"),
    ):
        since = log.tell()
        code, tail = run_logged(cmd, env=env, log=log)
    if code != 0:
        _fail(ctx, what, tail, [], since=since)


def build_step(ctx: LegContext, previous: BuildPlan) -> BuildPlan:
    """Ninja through ccache, appended to ``build.log``; the record gets this run's ccache statistics, even when
    the build fails, and the build's timings."""
    plan, record, ccache = previous, ctx.record, previous.ccache
    ninja = find_tool("ninja")
    # A leg with a base: that configuration whole first, then this leg's targets (every target without them). A
    # shard run compiles its part of this leg only (its own Ninja file and target: ninja_args).
    builds: list[tuple[Path, Toolchain, tuple[str, ...], str]] = []
    if plan.base is not None and plan.base.build is not None and not plan.ninja_args:
        builds.append((plan.base.build, plan.base.toolchain, (), f"Ninja build of {plan.base.leg.name}"))
    builds.append((plan.build, plan.toolchain, plan.ninja_args or ctx.leg.build_targets, "Ninja build"))
    t0 = time.monotonic()
    failure: tuple[str, deque[str], list[str], int] | None = None
    # A vulkan leg's glslc cache server runs as long as Ninja does, and is gone (socket and all) when it ends.
    with ctx.log.open("a", encoding="utf-8") as log, serving_glslc(ccache.glslc) as glslc_problem:
        if glslc_problem is not None:
            ctx.warn(f"{glslc_problem}: each shader call starts the Python launcher instead")
        for build, toolchain, targets, what in builds:
            cmd = [str(ninja), "-C", str(build), *targets]
            env = {**_base_env(ctx, plan, toolchain, build), **ccache.env(with_stats_log=True),
                   **ccache.sub_build_env()}  # fmt: skip
            with NinjaProgress(ctx.console, record.leg, heartbeat=ctx.inputs.heartbeat) as progress:
                # Where the build's own output starts: its first error is looked for from there.
                since = log.tell()
                code, tail = run_logged(cmd, env=env, log=log, on_line=progress.line)
            if code != 0:
                failure = (what, tail, progress.failed, since)
                break
    record.phases["build"] = round(time.monotonic() - t0, 3)
    stats = ccache.read_stats()
    record.ccache = ccache.to_record(stats)
    record.ccache["previous_toolchain"] = plan.previous_toolchain
    if plan.warmed_by is not None:
        record.ccache["warmed_by"] = plan.warmed_by
    if plan.shards_merged is not None:
        record.ccache["shards_merged"] = plan.shards_merged
    if plan.shard is not None:
        record.ccache["shard"] = plan.shard
    if ccache.remote_check:
        from pipeline.ccache.remote import remote_errors_warning

        if lost := remote_errors_warning(ccache.remote_check.display, stats.remote_errors, stats.calls):
            ctx.warn(lost)
    if failure is not None:
        what, tail, failed, since = failure
        _fail(ctx, what, tail, failed, since=since)
    record.timings = timings_for_build(plan.build)
    if plan.base is None:
        return plan
    # What the bundle takes from this leg's own build: exactly the files its targets made.
    from pipeline.leg.ninja_targets import target_files

    return replace(plan, made=target_files(ninja, plan.build, ctx.leg.build_targets))


# The chain itself, in its order: _run_steps calls each ``step(ctx, previous)`` with the one before's
# result (mypy checks every one against Step; tests/unit/test_leg_steps.py checks that each takes what
# the one before returns).
STEPS: tuple[Step[Any, Any], ...] = (
    source_step,
    toolchain_step,
    preflight_step,
    ccache_step,
    configure_step,
    build_step,
    bundle_step,
    check_step,
)
# A shard run's chain (``python -m pipeline shard``): the leg's steps to configure, its part of the plan, the build.
SHARD_STEPS: tuple[Step[Any, Any], ...] = (
    *STEPS[: STEPS.index(configure_step) + 1],
    shard_plan_step,
    build_step,
)


def _first_error_in_log(log: Path, since: int) -> str | None:
    """The first real error the step wrote to ``log`` from offset ``since`` (:mod:`pipeline.leg.first_error`)."""
    from pipeline.leg.first_error import first_error

    try:
        with log.open("r", encoding="utf-8", errors="replace") as text:
            text.seek(since)
            return first_error(text)
    except OSError:
        return None


def _fail(ctx: LegContext, step: str, tail: deque[str], failed: list[str], *, since: int) -> None:
    """Show the log's tail and raise BuildError naming the failed step and quoting its first real error
    (:func:`run_leg` writes the failed record)."""
    render.log_tail(ctx.console, ctx.log, tail)
    what = f"{step} failed"
    if failed:
        what += f" at {failed[0]}" + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else "")
    if cause := _first_error_in_log(ctx.log, since):
        what += f": {cause}"
    raise BuildError(f"{ctx.record.leg}: {what}; full log: {ctx.log}")
