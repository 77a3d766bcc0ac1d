"""One leg: source tree -> CMake configure -> Ninja build -> record.

The build directory is fresh every run (``<out>/<leg>/build``): a warm run
is warm because of ccache, never because of a stale tree. One run at a time
writes a leg's folder (an OS lock), and its record always says how the run
stands: running, success, failed or interrupted. The full log of
both steps goes to ``<out>/<leg>/build.log``.
"""

from __future__ import annotations

import shutil
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rich.console import Console

from pipeline.ccache.session import (
    CcacheSetup,
    leg_cache_dir,
    record_cache_toolchain,
    remote_spec,
    setup_ccache,
    workspace_of,
)
from pipeline.errors import BuildError, BundleError, SourceError, ToolchainError, UsageError
from pipeline.guard.children import run_logged
from pipeline.leg.options import LegOptions
from pipeline.leg.progress import NINJA_STATUS, NinjaProgress
from pipeline.results.record import RECORD_NAME, LegRecord, leg_lock
from pipeline.run.inputs import RunInputs
from pipeline.run.matrix import Leg, Matrix
from pipeline.toolchain.base import Toolchain
from pipeline.toolchain.prefixmap import prefix_map_flags, with_prefix_map


def leg_dir(out: Path, leg: str) -> Path:
    return out / leg


def find_tool(name: str) -> Path:
    """cmake/ninja next to this Python first (pinned in the venv), then PATH."""
    import sys

    suffix = ".exe" if sys.platform == "win32" else ""
    beside = Path(sys.executable).parent / f"{name}{suffix}"
    if beside.is_file():
        return beside
    found = shutil.which(name)
    if not found:
        raise ToolchainError(f"{name} not found: install the project (pip install .) or put {name} on PATH")
    return Path(found)


def check_cmake_project(source: Path) -> None:
    if not source.is_dir():
        raise UsageError(f"--source {source}: no such directory")
    if not (source / "CMakeLists.txt").is_file():
        raise UsageError(f"--source {source}: not a CMake project (no CMakeLists.txt at its top)")


def cmake_arguments(
    matrix: Matrix, leg: Leg, toolchain: Toolchain, ccache: CcacheSetup, source: Path, build: Path
) -> list[str]:
    """The configure line: shared flags, the leg's, the toolchain's, then ccache launchers."""
    launchers = [
        f"-DCMAKE_{lang}_COMPILER_LAUNCHER={ccache.executable}"
        for lang in ("C", "CXX", *toolchain.launcher_languages)
    ]
    args = [
        "-G",
        "Ninja",
        "-S",
        str(source),
        "-B",
        str(build),
        *matrix.cmake_args,
        *leg.cmake_args,
        *toolchain.cmake_args,
        *launchers,
    ]
    # The build's folders mapped to "." in every compiler's output: the same bundle from any folder.
    maps = prefix_map_flags(ccache.base_dir, source, build)
    return with_prefix_map(args, ("C", "CXX", *toolchain.launcher_languages), maps)




@dataclass(frozen=True, kw_only=True)
class SourceTree:
    """The tree a leg builds, what the record says of it, and the bundle's tag."""

    path: Path
    info: dict[str, Any]
    tag: str


@dataclass(frozen=True, kw_only=True)
class LegRun:
    """What one leg run made."""

    toolchain: Toolchain
    build_dir: Path
    record: LegRecord
    bundle: Path | None


def run_leg(
    inputs: RunInputs,
    leg: Leg,
    options: LegOptions,
    console: Console,
    *,
    provenance: Mapping[str, Any] | None = None,
) -> LegRun:
    """Build one leg: source, toolchain, ccache, configure, build, record, bundle.

    One run at a time: the leg's output folder is locked for the whole run
    (BusyError naming the holder, or a wait of ``--wait-lock``). The record
    says ``running`` before any work and ends ``success``, ``failed`` or
    ``interrupted`` (Ctrl-C, SIGTERM: the child process tree is stopped first).
    Raises BuildError when CMake or Ninja fails (the record says ``failed``).
    ``provenance``: what the record's source says beyond the tree itself (a
    reproduction names the original's repository, tag and mix).
    """
    matrix = inputs.require_matrix()
    clock = time.monotonic()
    out = inputs.out.resolve()
    work = leg_dir(out, leg.name)
    check_remote_spec(matrix, options)
    if options.source is not None:
        # A wrong --source is the user's typo: refused before anything is written.
        check_cmake_project(options.source)
    from pipeline.guard.locks import hold

    work.mkdir(parents=True, exist_ok=True)
    with hold(leg_lock(work), what=f"the output folder {work}", since=inputs.started,
              wait_seconds=inputs.wait_lock):
        record = LegRecord(
            leg=leg.name,
            backend=leg.backend,
            os=leg.os,
            # The real moment, even when replaying an earlier --now.
            started=inputs.started.isoformat(timespec="seconds"),
            status="running",
        )
        # Before any work: an earlier run's success must not stand beside this run's half-built tree.
        record.write(work / RECORD_NAME)
        # Nor an earlier run's ccache statistics (cache-save reads this log when there is no finished record).
        (work / "ccache-stats.log").unlink(missing_ok=True)
        try:
            return _run_leg_locked(inputs, leg, options, console, record, out=out, work=work, clock=clock,
                                   provenance=provenance)
        except KeyboardInterrupt:
            record.status = "interrupted"
            record.wall_seconds = round(time.monotonic() - clock, 3)
            record.write(work / RECORD_NAME)
            raise
        except BaseException:
            if record.status == "running":
                record.status = "failed"
                record.wall_seconds = round(time.monotonic() - clock, 3)
                record.write(work / RECORD_NAME)
            raise


def _run_leg_locked(
    inputs: RunInputs, leg: Leg, options: LegOptions, console: Console, record: LegRecord, *,
    out: Path, work: Path, clock: float, provenance: Mapping[str, Any] | None,
) -> LegRun:
    matrix = inputs.require_matrix()
    build = work / "build"
    source = source_step(inputs, options, out, console)
    toolchain = toolchain_step(inputs, leg, options, console)
    ccache = ccache_step(inputs, leg, options, toolchain, workspace=workspace_of(source.path, build), work=work)
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)

    cmake, ninja = find_tool("cmake"), find_tool("ninja")
    args = cmake_arguments(matrix, leg, toolchain, ccache, source.path, build)
    record.source = {**source.info, **(provenance or {})}
    record.cmake_args = args
    record.toolchain = toolchain.to_record()
    for warning in ccache.remote_check.warnings if ccache.remote_check else ():
        _warn(record, console, warning, inputs)
    if ccache.check_note:
        console.print(f"{leg.name}: {ccache.check_note}", highlight=False)
    previous_toolchain = record_cache_toolchain(ccache.cache_dir, toolchain.identity)
    base_env = {**inputs.environ, **toolchain.env, "NINJA_STATUS": NINJA_STATUS}
    console.print(
        f"[bold]{leg.name}[/]: {toolchain.identity}, ccache {ccache.version} "
        f"(compiler_check={ccache.compiler_check}{_check_detail(ccache)}, cache {ccache.cache_dir})"
    )
    with (work / "build.log").open("w", encoding="utf-8") as log:
        configure_step(record, work, console, log,
                       [str(cmake), *args, f"-DCMAKE_MAKE_PROGRAM={ninja}"],
                       {**base_env, **ccache.env(with_stats_log=False)})
        build_step(record, work, console, log, [str(ninja), "-C", str(build)],
                   {**base_env, **ccache.env(with_stats_log=True)}, ccache, previous_toolchain, inputs)

    record.timings = _timings(build)
    bundle = None
    if not options.no_bundle:
        bundle = bundle_step(leg, record, build, out, toolchain, source, console,
                             pack_cache=inputs.cache_home / "pack")
        if options.check_bundle:
            check_step(leg, record, bundle, work, console, source_tree=source.path)
    record.status = "success"
    record.wall_seconds = round(time.monotonic() - clock, 3)
    record.write(work / RECORD_NAME)
    show_record(record, console)
    return LegRun(toolchain=toolchain, build_dir=build, record=record, bundle=bundle)


def _check_detail(ccache: CcacheSetup) -> str:
    """`` -> string:1a2b3c4d...`` when the toolchain mode hands ccache something else than its name."""
    if ccache.check_value is None:
        return ""
    return f" -> {ccache.check_value[:15]}..." if len(ccache.check_value) > 18 else f" -> {ccache.check_value}"


def check_remote_spec(matrix: Matrix, options: LegOptions) -> None:
    """A bad remote cache URL fails before any work (a clone, a toolchain download)."""
    spec, where = remote_spec(matrix.ccache, options.remote_cache)
    if spec:
        from pipeline.ccache.remote import parse_remote

        parse_remote(spec, where=where)


def toolchain_step(inputs: RunInputs, leg: Leg, options: LegOptions, console: Console) -> Toolchain:
    """The leg's toolchain; a ROCm leg takes the run's resolved build (resolved here when the run has none)."""
    from pipeline.toolchain.base import ToolchainRequest
    from pipeline.toolchain.profiles import prepare_toolchain

    rocm = None
    if leg.needs_resolution and options.rocm_path is None:
        from pipeline.resolution.resolve import rocm_for_leg

        rocm = rocm_for_leg(inputs, leg)
    request = ToolchainRequest(
        leg=leg,
        environ=inputs.environ,
        rocm=rocm,
        rocm_path=options.rocm_path,
        rocm_version=inputs.rocm_policy if inputs.rocm_policy_overridden else None,
        cuda_path=options.cuda_path,
        vulkan_sdk=options.vulkan_sdk,
        pins=inputs.require_matrix().toolchains,
        download_cache=inputs.download_cache,
        toolchain_dir=inputs.toolchain_dir,
        http_backoff=inputs.http_backoff,
        wait_lock=inputs.wait_lock,
        started=inputs.started,
        http_retry_budget=inputs.http_retry_budget,
    )
    return prepare_toolchain(request, console)


def ccache_step(
    inputs: RunInputs, leg: Leg, options: LegOptions, toolchain: Toolchain, *, workspace: Path, work: Path
) -> CcacheSetup:
    from pipeline.ccache.compiler_check import resolve_compiler_check

    config = inputs.require_matrix().ccache
    check = resolve_compiler_check(config.compiler_check, toolchain)
    return setup_ccache(
        config,
        leg=leg.name,
        workspace=workspace,
        stats_log=work / "ccache-stats.log",
        cache_dir=inputs.cache_dir or leg_cache_dir(inputs.cache_home, leg.name),
        remote=options.remote_cache,
        check_value=check.value if check.value != check.mode else None,
        check_note=check.note,
    )


def configure_step(
    record: LegRecord, work: Path, console: Console, log: IO[str],
    cmd: list[str], env: Mapping[str, str],
) -> None:
    t0 = time.monotonic()
    with console.status(f"{record.leg}: configuring with CMake"):
        code, tail = run_logged(cmd, env=env, log=log)
    record.phases["configure"] = round(time.monotonic() - t0, 3)
    if code != 0:
        _fail(record, work, console, "CMake configure", tail, [])


def build_step(
    record: LegRecord, work: Path, console: Console, log: IO[str],
    cmd: list[str], env: Mapping[str, str], ccache: CcacheSetup, previous_toolchain: str | None,
    inputs: RunInputs,
) -> None:
    """Ninja through ccache; the record gets this run's ccache statistics, even when the build fails."""
    t0 = time.monotonic()
    with NinjaProgress(console, record.leg) as progress:
        code, tail = run_logged(cmd, env=env, log=log, on_line=progress.line)
    record.phases["build"] = round(time.monotonic() - t0, 3)
    stats = ccache.read_stats()
    record.ccache = ccache.to_record(stats)
    record.ccache["previous_toolchain"] = previous_toolchain
    if ccache.remote_check:
        from pipeline.ccache.remote import remote_errors_warning

        if lost := remote_errors_warning(ccache.remote_check.display, stats.remote_errors, stats.calls):
            _warn(record, console, lost, inputs)
    if code != 0:
        _fail(record, work, console, "Ninja build", tail, progress.failed)


def bundle_step(
    leg: Leg, record: LegRecord, build: Path, out: Path, toolchain: Toolchain, source: SourceTree,
    console: Console, *, pack_cache: Path | None,
) -> Path:
    """Package the bundle; compressed members unchanged since the last run come from ``pack_cache``."""
    from pipeline.bundle.make import package_bundle
    from pipeline.util.fsutil import human_bytes

    with console.status(f"{leg.name}: packaging the bundle"):
        bundle, stats = package_bundle(
            leg=leg, record=record, build_dir=build, out_dir=out, toolchain=toolchain,
            tag=source.tag, commit=record.source.get("commit"), pack_cache=pack_cache,
        )
    record.bundle = bundle.relative_to(out).as_posix()
    record.phases["package"] = round(stats.seconds, 3)
    console.print(
        f"{leg.name}: bundle {bundle} ({human_bytes(stats.bytes_out)} from {human_bytes(stats.bytes_in)}, "
        f"{stats.reused}/{stats.members} members reused, {stats.seconds:.1f}s)",
        highlight=False,
    )
    return bundle


def check_step(
    leg: Leg, record: LegRecord, bundle: Path, work: Path, console: Console, *, source_tree: Path | None = None
) -> None:
    """``check-bundle`` on the leg's own bundle: its result goes into the record; a failure fails the leg
    (:func:`run_leg` writes the failed record)."""
    from pipeline.bundle.check import check_built_bundle

    check = check_built_bundle(bundle, leg, scratch=work / "check", source_tree=source_tree)
    record.bundle_check = check.to_json()
    for smoke in check.checks:
        console.print(f"{leg.name}: {smoke.line}", highlight=False)
    console.print(f"{leg.name}: {check.summary}", highlight=False)
    if not check.ok:
        more = f" (and {len(check.problems) - 1} more)" if len(check.problems) > 1 else ""
        raise BundleError(f"{leg.name}: {bundle.name} fails check-bundle: {check.problems[0].line}{more}")


def _warn(record: LegRecord, console: Console, message: str, inputs: RunInputs) -> None:
    """A warning on record, and on screen: an annotation on GitHub Actions, a yellow line elsewhere."""
    from pipeline.github.runner import annotate

    record.warnings.append(message)
    if inputs.in_actions:
        annotate("warning", message, env=inputs.environ)
    else:
        from rich.markup import escape

        console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


def source_step(inputs: RunInputs, options: LegOptions, out: Path, console: Console) -> SourceTree:
    """The tree to build: ``--source``, else the run's source archive, else the source checked out under ``<out>/src``."""
    from pipeline.source.checkout import checkout_source, describe_checkout, folder_tag

    if options.source is not None:
        check_cmake_project(options.source)
        path = options.source.resolve()
        info = describe_checkout(path, environ=inputs.environ)
        tag = folder_tag(info, inputs.tag)
        return SourceTree(
            path=path, info={"path": str(path), "tag": tag, "commit": info.commit, "dirty": info.dirty}, tag=tag
        )
    if inputs.source_archive is not None:
        from pipeline.source.archive import unpack_source_archive

        with console.status(f"extracting {inputs.source_archive.name}"):
            path, manifest = unpack_source_archive(inputs.source_archive, out / "src" / "archive")
        check_cmake_project(path)
        record_info = {**manifest.source, "tag": manifest.tag, "commit": manifest.commit, "path": str(path),
                       "archive": manifest.archive, "archive_sha256": manifest.sha256}
        return SourceTree(path=path, info=record_info, tag=manifest.tag)
    from pipeline.resolution.resolve import source_for_run
    from pipeline.source.archive import git_objects_bytes

    matrix = inputs.require_matrix()
    # A fixed place under <out>: the clone is re-used and the configure line stays the same.
    path = out / "src" / "llama.cpp"
    try:
        with console.status(f"resolving the source ({matrix.source.repo})"):
            spec = source_for_run(inputs)
        before = git_objects_bytes(path)
        with console.status(f"checking out {spec.tag} into {path}"):
            commit = checkout_source(spec, path, git_url_template=inputs.git_url_template, environ=inputs.environ)
    except SourceError as err:
        raise SourceError(err.message, hint="offline? pass --source DIR to build an existing checkout") from None
    check_cmake_project(path)
    # What this leg's clone fetched (a re-used clone fetches only what it lacks).
    fetched = max(0, git_objects_bytes(path) - before)
    return SourceTree(path=path, info={**spec.to_json(), "commit": commit, "path": str(path), "fetched_bytes": fetched},
                      tag=spec.tag)


def _timings(build: Path) -> dict[str, object] | None:
    try:
        from pipeline.results.ninjalog import timings_for_build
    except ImportError:  # the timings module is optional for a build
        return None
    return timings_for_build(build)


def _fail(
    record: LegRecord,
    work: Path,
    console: Console,
    step: str,
    tail: deque[str],
    failed: list[str],
) -> None:
    """Show the log's tail and raise BuildError naming the failed step (:func:`run_leg` writes the failed record)."""
    console.print(f"[red]--- last {len(tail)} lines of {work / 'build.log'} ---[/]", highlight=False)
    for line in tail:
        console.print(line, markup=False, highlight=False)
    what = f"{step} failed"
    if failed:
        what += f" at {failed[0]}" + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else "")
    raise BuildError(f"{record.leg}: {what}; full log: {work / 'build.log'}")


def show_record(record: LegRecord, console: Console) -> None:
    """The figures that end every leg run."""
    from rich.table import Table

    cc = record.ccache
    title = f"{record.leg}: {record.status} ({record.toolchain.get('identity', '?')}, ccache {cc.get('version', '?')})"
    table = Table(title=title, title_justify="left")
    remote = bool(cc.get("remote"))
    for col in ("hits", *(("remote",) if remote else ()), "direct/preproc", "misses", "uncacheable", "errors",
                "hit rate", "wall"):
        table.add_column(col, justify="right")
    table.add_row(
        str(cc.get("hits", 0)),
        *((str(cc.get("remote_hits", 0)),) if remote else ()),
        f"{cc.get('direct_hits', 0)}/{cc.get('preprocessed_hits', 0)}",
        str(cc.get("misses", 0)),
        str(cc.get("uncacheable", 0)),
        str(cc.get("errors", 0)),
        f"{cc.get('hit_rate', 0.0):.1%}",
        f"{record.wall_seconds:.1f}s",
    )
    console.print(table)
