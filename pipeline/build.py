"""One leg: source tree -> CMake configure -> Ninja build -> record.

The build directory is fresh every run (``<out>/<leg>/build``): a warm run
is warm because of ccache, never because of a stale tree. The full log of
both steps goes to ``<out>/<leg>/build.log``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.ccache import CcacheSetup, remote_spec, setup_ccache, workspace_of
from pipeline.config import Leg, Matrix
from pipeline.errors import BuildError, SourceError, ToolchainError, UsageError
from pipeline.options import LegOptions
from pipeline.prefixmap import prefix_map_flags, with_prefix_map
from pipeline.record import RECORD_NAME, LegRecord
from pipeline.toolchain import Toolchain
from pipeline.toolchain.registry import prepare_toolchain

# Ninja's status line, forced to a known shape so progress can be read from it.
NINJA_STATUS = "[%f/%t] "
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] ")
TAIL_LINES = 25


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


def run_logged(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    log: IO[str],
    cwd: Path | None = None,
    on_line: Callable[[str], None] | None = None,
) -> tuple[int, deque[str]]:
    """Run ``cmd``, copying its output to ``log``; returns (exit code, last lines)."""
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    try:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            bufsize=1,
        )
    except OSError as exc:
        raise ToolchainError(f"cannot run {cmd[0]}: {exc.strerror}") from None
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        tail.append(line.rstrip("\n"))
        if on_line:
            on_line(line)
    return proc.wait(), tail


class NinjaProgress:
    """Turns Ninja's ``[n/total]`` lines into a live bar (or sparse lines off a terminal)."""

    def __init__(self, console: Console, leg: str) -> None:
        self.console = console
        self.leg = leg
        self.failed: list[str] = []
        self._last_decile = -1
        self._progress: Progress | None = None
        self._task = None
        if console.is_terminal:
            self._progress = Progress(
                TextColumn(f"[bold]{leg}[/] building"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[step]}", style="dim"),
                console=console,
                transient=True,
            )

    def __enter__(self) -> NinjaProgress:
        if self._progress:
            self._progress.start()
            self._task = self._progress.add_task("build", total=None, step="")  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress:
            self._progress.stop()

    def line(self, line: str) -> None:
        if line.startswith("FAILED: "):
            # Ninja 1.12+ writes "FAILED: [code=1] <outputs>".
            self.failed.append(re.sub(r"^\[code=-?\d+\]\s*", "", line[len("FAILED: ") :].strip()))
            return
        match = _STATUS.match(line)
        if not match:
            return
        done, total = int(match.group(1)), int(match.group(2))
        step = line[match.end() :].strip()
        if self._progress and self._task is not None:
            self._progress.update(self._task, completed=done, total=total, step=step[-60:])
        elif total:
            decile = done * 10 // total
            if decile != self._last_decile:
                self._last_decile = decile
                self.console.print(f"{self.leg}: [{done}/{total}] {step[-80:]}")


def run_leg(matrix: Matrix, leg: Leg, options: LegOptions, console: Console) -> LegRecord:
    """Build one leg and write its record; raises BuildError when CMake or Ninja fails."""
    started = datetime.now(UTC)  # the real moment, even when replaying an earlier --now
    clock = time.monotonic()
    out = options.out.resolve()
    work = leg_dir(out, leg.name)
    build = work / "build"
    # A bad remote cache URL fails before any work (a clone, a toolchain download).
    spec, where = remote_spec(matrix.ccache, options.remote_cache)
    if spec:
        from pipeline.remote_cache import parse_remote

        parse_remote(spec, where=where)

    source, source_info, tag = _source_tree(matrix, options, out, console)

    toolchain = prepare_toolchain(leg, matrix, options, console)
    ccache = setup_ccache(
        matrix.ccache,
        leg=leg.name,
        workspace=workspace_of(source, build),
        stats_log=work / "ccache-stats.log",
        cache_dir=options.cache_dir,
        remote=options.remote_cache,
    )
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)

    cmake = find_tool("cmake")
    ninja = find_tool("ninja")
    args = cmake_arguments(matrix, leg, toolchain, ccache, source, build)
    record = LegRecord(
        leg=leg.name,
        backend=leg.backend,
        os=leg.os,
        started=started.isoformat(timespec="seconds"),
        source=source_info,
        cmake_args=args,
        toolchain=toolchain.to_record(),
    )
    for warning in ccache.remote_check.warnings if ccache.remote_check else ():
        _warn(record, console, warning)
    previous_toolchain = _swap_cache_owner(ccache.cache_dir, toolchain.identity)
    base_env = {**os.environ, **toolchain.env, "NINJA_STATUS": NINJA_STATUS}
    console.print(
        f"[bold]{leg.name}[/]: {toolchain.identity}, ccache {ccache.version} "
        f"(compiler_check={ccache.compiler_check}, cache {ccache.cache_dir})"
    )

    with (work / "build.log").open("w", encoding="utf-8") as log:
        t0 = time.monotonic()
        with console.status(f"{leg.name}: configuring with CMake"):
            code, tail = run_logged(
                [str(cmake), *args, f"-DCMAKE_MAKE_PROGRAM={ninja}"],
                env={**base_env, **ccache.env(with_stats_log=False)},
                log=log,
            )
        record.phases["configure"] = round(time.monotonic() - t0, 3)
        if code != 0:
            _fail(record, work, clock, console, "CMake configure", tail, [])

        t0 = time.monotonic()
        with NinjaProgress(console, leg.name) as progress:
            code, tail = run_logged(
                [str(ninja), "-C", str(build)],
                env={**base_env, **ccache.env(with_stats_log=True)},
                log=log,
                on_line=progress.line,
            )
        record.phases["build"] = round(time.monotonic() - t0, 3)
        stats = ccache.read_stats()
        record.ccache = ccache.to_record(stats)
        # What filled this cache last: the report warns on a low hit rate only
        # when the toolchain did not change (then something else broke the cache).
        record.ccache["previous_toolchain"] = previous_toolchain
        if ccache.remote_check:
            from pipeline.remote_cache import remote_errors_warning

            if lost := remote_errors_warning(ccache.remote_check.display, stats.remote_errors, stats.calls):
                _warn(record, console, lost)
        if code != 0:
            _fail(record, work, clock, console, "Ninja build", tail, progress.failed)

    record.timings = _timings(build)
    if not options.no_bundle:
        from pipeline.bundle import make_bundle

        with console.status(f"{leg.name}: packaging the bundle"):
            bundle = make_bundle(
                leg=leg, record=record, build_dir=build, out_dir=out, toolchain=toolchain,
                tag=tag, commit=source_info.get("commit"),
            )
        record.bundle = bundle.relative_to(out).as_posix()
        console.print(f"{leg.name}: bundle {bundle}")
    record.wall_seconds = round(time.monotonic() - clock, 3)
    record.write(work / RECORD_NAME)
    show_record(record, console)
    return record


def _warn(record: LegRecord, console: Console, message: str) -> None:
    """A warning on record, and on screen: an annotation on GitHub Actions, a yellow line elsewhere."""
    from pipeline.github import annotate, in_actions

    record.warnings.append(message)
    if in_actions():
        annotate("warning", message)
    else:
        from rich.markup import escape

        console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


def _source_tree(
    matrix: Matrix, options: LegOptions, out: Path, console: Console
) -> tuple[Path, dict[str, Any], str]:
    """The tree to build, what the record says of it, and the bundle's tag."""
    from pipeline.source import checkout_source, describe_checkout, folder_tag, source_for_run

    if options.source is not None:
        check_cmake_project(options.source)
        source = options.source.resolve()
        info = describe_checkout(source)
        tag = folder_tag(info, options.tag)
        return source, {"path": str(source), "tag": tag, "commit": info.commit, "dirty": info.dirty}, tag
    # A fixed place under <out>: the clone is re-used and the configure line stays the same.
    source = out / "src" / "llama.cpp"
    try:
        with console.status(f"resolving the source ({matrix.source.repo})"):
            spec = source_for_run(matrix, options)
        with console.status(f"checking out {spec.tag} into {source}"):
            commit = checkout_source(spec, source)
    except SourceError as err:
        raise SourceError(err.message, hint="offline? pass --source DIR to build an existing checkout") from None
    check_cmake_project(source)
    return source, {**spec.to_json(), "commit": commit, "path": str(source)}, spec.tag


CACHE_OWNER = "pipeline-toolchain.txt"


def _swap_cache_owner(cache_dir: Path, identity: str) -> str | None:
    """Record ``identity`` as the toolchain filling ``cache_dir``; return the one before it."""
    marker = cache_dir / CACHE_OWNER
    try:
        previous = marker.read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, UnicodeDecodeError):
        previous = None
    except OSError:
        return None
    from pipeline.fsutil import atomic_write_text

    atomic_write_text(marker, identity + "\n")
    return previous


def _timings(build: Path) -> dict[str, object] | None:
    try:
        from pipeline.ninjalog import timings_for_build
    except ImportError:  # the timings module is optional for a build
        return None
    return timings_for_build(build)


def _fail(
    record: LegRecord,
    work: Path,
    clock: float,
    console: Console,
    step: str,
    tail: deque[str],
    failed: list[str],
) -> None:
    record.status = "failed"
    record.wall_seconds = round(time.monotonic() - clock, 3)
    record.write(work / RECORD_NAME)
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
