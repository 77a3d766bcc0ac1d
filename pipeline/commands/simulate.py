"""``python -m pipeline simulate``: what would a toolchain policy have done?"""

from __future__ import annotations

import argparse
import json
from datetime import date
from typing import Any

from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.rocm_hosts import index_for
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import ROCM_OSES
from pipeline.rocm import simulate as sim
from pipeline.util.timeutil import EARLIEST_MOMENT, LATEST_MOMENT

# The nightly workflow's schedule (.github/workflows/nightly.yml: "17 9 * * *").
DEFAULT_CRON = "09:17Z"

_EPILOG = f"""\
Each day from --from to --to, one run at --cron (UTC) resolves the ROCm build
every policy would take, seeing only builds the index says were published by
then. Per policy it reports the build of each run, the distinct toolchains of
each week (Sunday to Saturday, San Francisco time), the runs that build cold
(their toolchain differs from the previous run's; the window's first run is
not counted) and the split weeks (more than one toolchain).

With the warm-up (on unless --no-warm-up): each Saturday at --warm-cron the
weekly policies compile the next week's build ahead, the build they would take
at the week's start among those published by then (`warm-up`). A cold run
whose build a warm-up compiled before it is warm: "cold (warm-up)" counts the
nights that still compile cold on the publish path, and "late Saturdays" the
weeks whose Saturday build came out after the warm-up (the only weeks that
can still have one, under weekly-stable).

Policies: weekly-stable (the matrix default: never splits a week), weekly
(the original job's rule: a late Saturday publish can split a week), latest,
an explicit version, and weekly-sunday, the rejected variant whose cutoff is
the most recent Sunday itself (for comparison).
Default: {", ".join(sim.DEFAULT_POLICIES)}.
"""


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "simulate",
        help="replay TheRock's publishing history under toolchain policies",
        description="Replay the index's publishing history day by day and compare toolchain policies.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--from", dest="start", metavar="DATE", type=_date, required=True, help="first run (UTC date)"
    )
    p.add_argument("--to", dest="end", metavar="DATE", type=_date, help="last run (UTC date; default: today)")
    p.add_argument(
        "--cron", default=DEFAULT_CRON, metavar="HH:MMZ", help=f"run time, UTC (default: {DEFAULT_CRON})"
    )
    p.add_argument(
        "--warm-cron",
        default=sim.DEFAULT_WARM_CRON,
        metavar="HH:MMZ",
        help=f"the Saturday warm-up's time, UTC (default: {sim.DEFAULT_WARM_CRON}, warm-up.yml's schedule)",
    )
    p.add_argument("--no-warm-up", action="store_true", help="replay without the Saturday warm-up")
    p.add_argument(
        "--policy",
        dest="policies",
        action="append",
        metavar="POLICY",
        help="weekly-stable, weekly, latest, weekly-sunday or a version; repeat for several "
        "(default: every rule)",
    )
    S.add_flag(p, S.INDEX_URL)
    p.add_argument("--os", choices=ROCM_OSES, help="tarball OS (default: the first ROCm leg's)")
    p.add_argument("--family", help="TheRock GPU family, e.g. gfx110X-all (default: the first ROCm leg's)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run, needs_matrix=False)


def _defaults(args: argparse.Namespace, inputs: RunInputs) -> tuple[str, str, str]:
    """Index URL, os and family: the flags, else the matrix."""
    index_url = inputs.index_url if inputs.given(S.INDEX_URL) else None
    os_name, family = args.os, args.family
    if index_url and family:
        return index_url, os_name or "linux", family
    matrix = inputs.require_matrix()
    # The host that published the simulation's last day's builds, unless one index is named.
    index_url = (
        index_url
        or matrix.rocm.index_url
        or index_for(matrix.rocm.hosts, (args.end or inputs.now.date()), where=f"{matrix.path} rocm.hosts")
    )
    if not family:
        rocm = [leg for leg in matrix.legs.values() if leg.needs_resolution and leg.family]
        if not rocm:
            raise UsageError(f"--family: required, {matrix.path} has no rocm leg to take it from")
        family = rocm[0].family
        os_name = os_name or rocm[0].os
    assert family is not None
    return index_url, os_name or "linux", family


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.rocm.index import builds_for
    from pipeline.rocm.index_fetch import fetch_index
    from pipeline.util.console import make_console

    cron = sim.parse_cron(args.cron)
    warm_cron = None if args.no_warm_up else sim.parse_cron(args.warm_cron, "--warm-cron")
    policies = [sim.check_policy(p) for p in (args.policies or sim.DEFAULT_POLICIES)]
    end = args.end or inputs.now.date()
    for flag, day in (("--from", args.start), ("--to", end)):
        # The same range as --now: week cutoffs and ages overflow near year 1 or 9999.
        if not EARLIEST_MOMENT.date() <= day < LATEST_MOMENT.date():
            raise UsageError(f"{flag} {day.isoformat()} is outside the dates a run can have "
                             f"({EARLIEST_MOMENT.year} to {LATEST_MOMENT.year - 1})")  # fmt: skip
    sim.run_moments(args.start, end, cron)  # validate the window before any download
    index_url, os_name, family = _defaults(args, inputs)

    err = make_console(inputs.environ, stderr=True)
    with err.status(f"reading {index_url}") as status:
        entries = fetch_index(
            index_url,
            retry=inputs.retry,
            on_page=lambda pages, n: status.update(f"reading {index_url}: {n} entries, {pages} page(s)"),
        )
    builds = builds_for(entries, index_url, os_name, family)
    if not builds:
        raise UsageError(
            f"{index_url}: no {os_name} {family} tarballs in the index (check --os and --family)"
        )
    results = sim.simulate(
        builds, policies=policies, start=args.start, end=end, cron=cron, warm_cron=warm_cron
    )

    if args.json:
        doc = {
            "from": args.start.isoformat(),
            "to": end.isoformat(),
            "cron": cron.strftime("%H:%MZ"),
            "warm_cron": None if warm_cron is None else warm_cron.strftime("%H:%MZ"),
            "os": os_name,
            "family": family,
            "index_url": index_url,
            "builds": len(builds),
            "policies": {name: result.to_json() for name, result in results.items()},
        }
        print(json.dumps(doc, indent=2))
        return 0
    _print(
        make_console(inputs.environ),
        results,
        title=f"{os_name} {family}, {args.start} to {end} at {cron:%H:%M}Z",
    )
    return 0


def _print(console: Any, results: dict[str, sim.PolicyResult], *, title: str) -> None:
    from rich.table import Table

    summary = Table(title=f"Policy replay: {title}", header_style="bold")
    left = ("Policy", "Split weeks")
    columns = ("Policy", "Runs", "Unresolved", "Toolchains", "Cold runs", "Cold (warm-up)", "Split weeks")
    for name in columns:
        summary.add_column(name, justify="left" if name in left else "right")
    for name, result in results.items():
        split = result.split_weeks()
        summary.add_row(
            name,
            str(len(result.runs)),
            str(sum(1 for r in result.runs if r.version is None)),
            str(len(result.distinct_toolchains())),
            str(len(result.cold_runs())),
            # "-": no warm-up for this policy (no windows: latest, a version) or none asked for.
            str(len(result.cold_runs(warmed=True))) if result.warm_ups else "-",
            ", ".join(d.isoformat() for d in split) or "none",
            style="yellow" if split else None,
        )
    console.print(summary)
    _print_warm_ups(console, results)

    weeks = Table(title="Toolchains per week (Sunday, San Francisco)", header_style="bold")
    weeks.add_column("Week of")
    for name in results:
        # Fold, never elide: a split week's two versions are the point of the table.
        weeks.add_column(name, overflow="fold")
    by_policy = {name: dict(result.weeks()) for name, result in results.items()}
    sundays = sorted({d for w in by_policy.values() for d in w})
    for sunday in sundays:
        cells = []
        for name in results:
            versions = by_policy[name].get(sunday, [])
            text = ", ".join(versions) or "—"
            cells.append(f"[yellow]{text}[/yellow]" if len(versions) > 1 else text)
        weeks.add_row(sunday.isoformat(), *cells)
    console.print(weeks)


def _print_warm_ups(console: Any, results: dict[str, sim.PolicyResult]) -> None:
    """Per warmed policy: the nights still cold on the publish path, beside the weeks whose Saturday was late."""
    from rich.table import Table

    warmed = {name: r for name, r in results.items() if r.warm_ups}
    if not warmed:
        return
    table = Table(title="With the Saturday warm-up", header_style="bold")
    for name in ("Policy", "Warm-ups", "Cold nights (warm-up)", "Late Saturdays"):
        table.add_column(name, justify="right" if name == "Warm-ups" else "left", overflow="fold")
    for name, result in warmed.items():
        cold = [r.day.isoformat() for r in result.cold_runs(warmed=True)]
        late = [w.saturday.isoformat() for w in result.late_saturdays()]
        table.add_row(name, str(len(result.warm_ups)), ", ".join(cold) or "none", ", ".join(late) or "none")
    console.print(table)
