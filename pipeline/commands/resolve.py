"""``python -m pipeline resolve``: which ROCm build a run (or one leg) takes.

With ``--leg`` or ``--os``/``--family`` it answers for one leg; with neither it
resolves every ROCm leg of the matrix once, with one ``now``, and writes the
run's resolution file that leg jobs read (``--resolved`` or its environment variable).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.commands.shared.build_args import add_for_build, settings_from_build_args
from pipeline.commands.shared.resolution_args import add_resolution_options, fetch_with_status
from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.resolution_file import DEFAULT_RESOLVED_PATH, Resolution, ResolvedRocm, write_resolution
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import ROCM_OSES
from pipeline.run_resolution import resolve_run, resolve_target
from pipeline.util.timeutil import format_utc

if TYPE_CHECKING:
    from rich.console import Console

_EPILOG = """\
Overrides, strongest first: the flag, then the environment, then matrix.toml
(see `python -m pipeline settings`).
Policies: weekly-stable (the newest build dated on or before the Saturday
before the most recent Sunday in San Francisco and published before that
Sunday began), weekly (the same cutoff, published by --now), latest, stable
(the newest stable release, from matrix.toml's stable hosts), or an explicit
version: a nightly's such as 10.1.0a20260807 or a release's such as 7.14.0.
Builds published after --now are ignored.
With matrix.toml's [rocm] distribution = "wheels", one leg (--leg, --os/--family) resolves
from its wheel index (rocm.wheel_index_url), as the whole run does.
"""


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
    p.add_argument("--os", choices=ROCM_OSES, dest="os_name", help="target OS (with --family)")
    p.add_argument("--family", metavar="FAMILY", help="TheRock GPU family, e.g. gfx110X-all (with --os)")
    add_resolution_options(p)
    p.add_argument(
        "--write",
        metavar="PATH",
        type=Path,
        help="where the run's resolution goes (default: <out>/resolved.json; whole-run mode only)",
    )
    S.add_flag(p, S.OUT)
    S.add_flag(p, S.TAG, help="llama.cpp tag of the run, b<digits> or latest (whole-run mode)")
    S.add_flag(
        p,
        S.ROCM_PATH,
        help="whole-run mode: the rocm legs build with this installed ROCm: none is resolved, "
        "no index is fetched",
    )
    p.add_argument(
        "--no-source",
        action="store_true",
        help="whole-run mode: resolve the ROCm builds only, not the source tag (no git access)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_for_build(p, "--source means --no-source")
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.util.console import make_console

    if args.for_build is not None:
        from pipeline.inputs.run_inputs import read_inputs

        args = settings_from_build_args(args, args.for_build)
        inputs = read_inputs(args, environ=inputs.environ, clock=lambda: inputs.started, need_matrix=False)
    err = make_console(inputs.environ, stderr=True)
    single = args.leg is not None or args.os_name is not None or args.family is not None
    if args.leg is not None and (args.os_name is not None or args.family is not None):
        raise UsageError("resolve: give either --leg or --os with --family, not both")
    if args.leg is None and single and (args.os_name is None or args.family is None):
        raise UsageError("resolve: --os and --family go together (or use --leg)")
    if single and (
        args.write is not None
        or args.tag is not None
        or args.no_source
        or getattr(args, S.ROCM_PATH.name, None) is not None
    ):
        raise UsageError(
            "resolve: --write, --tag, --no-source and --rocm-path are for the whole run "
            "(without --leg/--os/--family)"
        )

    now = inputs.now
    if single:
        if args.leg is not None:
            leg = inputs.require_matrix().leg(args.leg)
            if not leg.needs_resolution or leg.family is None:
                raise UsageError(
                    f"leg {leg.name!r} is a {leg.backend} leg: only rocm legs resolve a ROCm build"
                )
            os_name, family, targets = leg.os, leg.family, leg.targets
        else:
            os_name, family, targets = args.os_name, args.family, None
        # matrix.toml's [rocm] distribution decides the index, as it does for the whole run.
        resolved = resolve_target(
            inputs, os_name, family, fetch=fetch_with_status(err, inputs), targets=targets
        )
        say_stale(inputs, [resolved])
        if args.json:
            print(json.dumps(resolved.to_json(), indent=2))
        else:
            print_one(make_console(inputs.environ), resolved, now)
        return 0

    matrix = inputs.require_matrix()
    if inputs.rocm_path is not None and any(leg.needs_resolution for leg in matrix.legs.values()):
        err.print(
            f"ROCm: the rocm legs build with {inputs.rocm_path} ({inputs.origins.get(S.ROCM_PATH.name)}): "
            "no ROCm build resolved, no index fetched",
            highlight=False,
        )
    with err.status(f"resolving the run's inputs ({matrix.source.repo})"):
        resolution = resolve_run(inputs, fetch=fetch_with_status(err, inputs), source=not args.no_source)
    # Before the file is written: with rocm.stale = "fail" no leg builds with a stale toolchain.
    say_stale(inputs, list(resolution.legs.values()))
    target = args.write if args.write is not None else inputs.out / DEFAULT_RESOLVED_PATH.name
    write_resolution(target, resolution)
    if args.json:
        print(json.dumps(resolution.to_json(), indent=2, sort_keys=True))
    else:
        print_run(make_console(inputs.environ), resolution)
        err.print(f"wrote {target}")
    return 0


def _published(value: ResolvedRocm) -> str:
    return format_utc(value.published) if value.published else "unknown"


def say_stale(inputs: RunInputs, builds: list[ResolvedRocm]) -> None:
    """One warning for each stale os/family among ``builds`` (pipeline/rocm/staleness.py), however many legs share
    it; with rocm.stale = "fail" the first one is a StaleToolchainError (exit 14) instead."""
    from pipeline.github.runner import annotate, append_summary
    from pipeline.rocm.staleness import check_stale

    said: set[tuple[str, str]] = set()
    for resolved in builds:
        if (resolved.os, resolved.family) in said:
            continue
        said.add((resolved.os, resolved.family))
        line = check_stale(
            resolved, inputs.now, max_age_days=inputs.rocm_max_age_days, action=inputs.rocm_stale
        )
        if line is not None:
            # stderr: `resolve --json` prints JSON on stdout. In Actions also the run's summary page.
            annotate("warning", line, title="stale ROCm toolchain", env=inputs.environ, stream=sys.stderr)
            append_summary(f"- :warning: {line}", env=inputs.environ)


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
        "index": resolved.index_url or "-",
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
    for column in ("leg", "os", "family", "version", "published", "file", "index"):
        table.add_column(column, style="green" if column == "version" else None)
    for name, leg in sorted(resolution.legs.items()):
        # The host it came from: TheRock's hosts changed on 2026-08-23 (pipeline/inputs/rocm_hosts.py).
        table.add_row(name, leg.os, leg.family, leg.version, _published(leg), leg.file, leg.index_url or "-")
    if not resolution.legs:
        table.caption = "the matrix has no rocm legs"
    console.print(table)
    if resolution.source:
        src = resolution.source
        console.print(
            f"source: {src.repo} tag [green]{src.tag}[/] (base {src.base_tag} "
            f"at {str(src.base_commit)[:12]})",
            highlight=False,
        )
