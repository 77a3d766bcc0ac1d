"""What a leg run prints: its header line, warnings, a failed step's log tail, the bundle and the closing table.

The steps (:mod:`pipeline.leg.steps`) decide; this module only renders what
they hand it. Build progress on screen is :mod:`pipeline.leg.progress`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pipeline.archives.packing import PackStats
from pipeline.ccache.session import CcacheSetup
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain
from pipeline.util.fsutil import human_bytes


def header(console: Console, leg: str, toolchain: Toolchain, ccache: CcacheSetup) -> None:
    """The line before configuring: the toolchain, ccache and how it checks the compiler."""
    console.print(
        f"[bold]{leg}[/]: {toolchain.identity}, ccache {ccache.version} "
        f"(compiler_check={ccache.compiler_check}{_check_detail(ccache)}, cache {ccache.ccache_dir})"
    )


def _check_detail(ccache: CcacheSetup) -> str:
    """`` -> string:1a2b3c4d...`` when the toolchain mode hands ccache something else than its name."""
    if ccache.check_value is None:
        return ""
    return (
        f" -> {ccache.check_value[:15]}..." if len(ccache.check_value) > 18 else f" -> {ccache.check_value}"
    )


def note(console: Console, leg: str, text: str) -> None:
    console.print(f"{leg}: {text}", highlight=False)


def warning(console: Console, message: str, *, in_actions: bool, environ: Mapping[str, str]) -> None:
    """An annotation on GitHub Actions, a yellow line elsewhere."""
    if in_actions:
        from pipeline.github.runner import annotate

        annotate("warning", message, env=environ)
    else:
        console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


def log_tail(console: Console, log: Path, tail: Iterable[str]) -> None:
    """A failed step's last lines, before the error that names the full log."""
    lines = list(tail)
    console.print(f"[red]--- last {len(lines)} lines of {log} ---[/]", highlight=False)
    for line in lines:
        console.print(line, markup=False, highlight=False)


def bundle_line(console: Console, leg: str, bundle: Path, stats: PackStats) -> None:
    console.print(
        f"{leg}: bundle {bundle} ({human_bytes(stats.bytes_out)} from {human_bytes(stats.bytes_in)}, "
        f"{stats.reused}/{stats.members} members reused, {stats.seconds:.1f}s)",
        highlight=False,
    )


def show_record(record: LegRecord, console: Console) -> None:
    """The figures that end every leg run."""
    if record.status == "configured":
        # Nothing compiled: no ccache figures to show.
        console.print(
            f"{record.leg}: configured ({record.toolchain.get('identity', '?')}) in "
            f"{record.wall_seconds:.1f}s; nothing compiled (--configure-only)"
        )
        return
    cc = record.ccache
    title = f"{record.leg}: {record.status} ({record.toolchain.get('identity', '?')}, ccache {cc.get('version', '?')})"
    table = Table(title=title, title_justify="left")
    remote = bool(cc.get("remote"))
    for col in (
        "hits",
        *(("remote",) if remote else ()),
        "direct/preproc",
        "misses",
        "uncacheable",
        "errors",
        "hit rate",
        "wall",
    ):
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
