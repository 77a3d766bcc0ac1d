"""``python -m pipeline resolve``: which ROCm build a run (or one leg) takes.

With ``--leg`` or ``--os``/``--family`` it answers for one leg; with neither it
resolves every ROCm leg of the matrix once, with one ``now``, and writes the
run's resolution file that leg jobs read through ``PIPELINE_RESOLVED``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.config import MATRIX_ENV, Matrix, load_matrix, matrix_path
from pipeline.errors import UsageError
from pipeline.resolve import (
    DEFAULT_RESOLVED_PATH,
    Fetch,
    Resolution,
    ResolvedRocm,
    effective_index_url,
    effective_policy,
    load_entries,
    resolve_from_entries,
    resolve_run,
    write_resolution,
)
from pipeline.rocm.index import IndexEntry, fetch_index
from pipeline.rocm.versions import OSES
from pipeline.timeutil import effective_now, format_utc

if TYPE_CHECKING:
    from rich.console import Console

_EPILOG = """\
Overrides, strongest first: the flag, then the environment
(PIPELINE_ROCM_VERSION, PIPELINE_ROCM_INDEX_URL, PIPELINE_NOW), then matrix.toml.
Policies: weekly-stable (the newest build dated on or before the Saturday
before the most recent Sunday in San Francisco and published before that
Sunday began), weekly (the same cutoff, published by --now), latest, or an
explicit version such as 10.1.0a20260807. Builds published after --now are ignored.
"""


def add_resolution_options(p: argparse.ArgumentParser) -> None:
    """--rocm-version, --now, --index-url: shared by resolve and replay."""
    p.add_argument(
        "--rocm-version",
        metavar="POLICY",
        help="weekly-stable, weekly, latest or a version like 10.1.0a20260807 "
        "(default: $PIPELINE_ROCM_VERSION, else matrix.toml's)",
    )
    p.add_argument(
        "--now", metavar="ISO", help="the run's moment, ISO-8601; naive is UTC (default: $PIPELINE_NOW, else now)"
    )
    p.add_argument(
        "--index-url",
        metavar="URL",
        help="TheRock index, HTML or S3 XML (default: $PIPELINE_ROCM_INDEX_URL, else matrix.toml's)",
    )


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "resolve",
        help="resolve the ROCm build of one leg, or of every ROCm leg into out/resolved.json",
        description="Resolve TheRock ROCm builds. With --leg or --os/--family: one answer. "
        "With neither: every ROCm leg of the matrix once, written to the run's resolution file.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--leg", metavar="LEG", help="take os and family from this leg of the matrix")
    p.add_argument("--os", choices=OSES, dest="os_name", help="target OS (with --family)")
    p.add_argument("--family", metavar="FAMILY", help="TheRock GPU family, e.g. gfx110X-all (with --os)")
    add_resolution_options(p)
    p.add_argument(
        "--write",
        metavar="PATH",
        type=Path,
        help=f"where the run's resolution goes (default: {DEFAULT_RESOLVED_PATH}; whole-run mode only)",
    )
    p.add_argument(
        "--tag",
        metavar="TAG",
        help="llama.cpp tag of the run, b<digits> or latest (whole-run mode; default: $PIPELINE_TAG, "
        "else matrix.toml's)",
    )
    p.add_argument(
        "--no-source",
        action="store_true",
        help="whole-run mode: resolve the ROCm builds only, not the source tag (no git access)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def optional_matrix(explicit: str | None) -> Matrix | None:
    """The matrix, or None when none was named and ./matrix.toml does not exist."""
    if explicit is None and not os.environ.get(MATRIX_ENV) and not matrix_path(None).exists():
        return None
    return load_matrix(explicit)


def fetch_with_status(console: Console) -> Fetch:
    """A fetch function that shows pages and entries read while the index loads."""

    def fetch(url: str) -> Sequence[IndexEntry]:
        with console.status(f"reading the ROCm index {url}") as status:

            def on_page(pages: int, entries: int) -> None:
                status.update(f"reading the ROCm index {url}: {pages} page(s), {entries} entries")

            return fetch_index(url, on_page=on_page)

    return fetch


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    err = Console(stderr=True)
    single = args.leg is not None or args.os_name is not None or args.family is not None
    if args.leg is not None and (args.os_name is not None or args.family is not None):
        raise UsageError("resolve: give either --leg or --os with --family, not both")
    if args.leg is None and single and (args.os_name is None or args.family is None):
        raise UsageError("resolve: --os and --family go together (or use --leg)")
    if single and (args.write is not None or args.tag is not None or args.no_source):
        raise UsageError("resolve: --write, --tag and --no-source are for the whole run (without --leg/--os/--family)")

    now = effective_now(args.now)
    if single:
        matrix = load_matrix(args.matrix) if args.leg is not None else optional_matrix(args.matrix)
        if args.leg is not None:
            assert matrix is not None
            leg = matrix.leg(args.leg)
            if leg.backend != "rocm" or leg.family is None:
                raise UsageError(f"leg {leg.name!r} is a {leg.backend} leg: only rocm legs resolve a ROCm build")
            os_name, family = leg.os, leg.family
        else:
            os_name, family = args.os_name, args.family
        policy = effective_policy(matrix, args.rocm_version)
        url = effective_index_url(matrix, args.index_url)
        entries = load_entries(url, policy, fetch_with_status(err))
        resolved = resolve_from_entries(entries, os_name, family, policy=policy, now=now, index_url=url)
        if args.json:
            print(json.dumps(resolved.to_json(), indent=2))
        else:
            print_one(Console(), resolved, now)
        return 0

    matrix = load_matrix(args.matrix)
    tag = args.tag or os.environ.get("PIPELINE_TAG") or None
    if tag is not None and tag != "latest" and not re.fullmatch(r"b\d+", tag):
        raise UsageError(f"--tag {tag!r}: expected 'latest' or a tag like 'b10327'")
    with err.status(f"resolving the run's inputs ({matrix.source.repo})"):
        resolution = resolve_run(
            matrix,
            now=now,
            policy=args.rocm_version,
            index_url=args.index_url,
            fetch=fetch_with_status(err),
            source=not args.no_source,
            source_tag=tag,
        )
    target = args.write if args.write is not None else DEFAULT_RESOLVED_PATH
    write_resolution(target, resolution)
    if args.json:
        print(json.dumps(resolution.to_json(), indent=2, sort_keys=True))
    else:
        print_run(Console(), resolution)
        err.print(f"wrote {target}")
    return 0


def _published(value: ResolvedRocm) -> str:
    return format_utc(value.published) if value.published else "unknown"


def print_one(console: Console, resolved: ResolvedRocm, now: datetime) -> None:
    from rich.table import Table

    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    rows = {
        "os / family": f"{resolved.os} {resolved.family}",
        "policy": resolved.policy,
        "cutoff": resolved.cutoff.strftime("%Y%m%d") if resolved.cutoff else "-",
        "version": f"[green]{resolved.version}[/]",
        "published": _published(resolved),
        "url": resolved.url,
        "now": format_utc(now),
    }
    for key, value in rows.items():
        table.add_row(key, value)
    console.print(table)


def print_run(console: Console, resolution: Resolution) -> None:
    from rich.table import Table

    cutoff = resolution.cutoff.strftime("%Y%m%d") if resolution.cutoff else "none"
    table = Table(
        title=f"ROCm builds at {format_utc(resolution.now)} "
        f"(policy {resolution.rocm_policy}, cutoff {cutoff})",
        title_justify="left",
    )
    for column in ("leg", "os", "family", "version", "published", "file"):
        table.add_column(column, style="green" if column == "version" else None)
    for name, leg in sorted(resolution.legs.items()):
        table.add_row(name, leg.os, leg.family, leg.version, _published(leg), leg.file)
    if not resolution.legs:
        table.caption = "the matrix has no rocm legs"
    console.print(table)
    if resolution.source:
        src = resolution.source
        console.print(f"source: {src.get('repo')} tag [green]{src.get('tag')}[/] (base {src.get('base_tag')} "
                      f"at {str(src.get('base_commit'))[:12]})", highlight=False)
