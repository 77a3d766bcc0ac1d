"""``python -m pipeline replay``: what each day of the last weeks resolved to.

For each day of the last N weeks (at the same time of day as ``--now``), the
cutoff and the version each ROCm leg takes, from one fetch of the index.
Builds published after a day's moment are ignored, so each row answers what
that day's run saw. Under the weekly policies the rows of a Sunday-to-Saturday
week (San Francisco time) share one cutoff; under ``weekly-stable`` they also
share one version, whatever the publish times.

Old nightlies ran the rule their resolution records (``rocm_policy``), not
today's default: ``--resolution FILE`` replays with that rule (and, unless
``--now`` says otherwise, up to that run's moment), ``--policy`` names a rule.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.commands.shared.resolution_args import add_resolution_options, fetch_with_status
from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.leg import Leg
from pipeline.inputs.resolution_file import Resolution, load_resolution
from pipeline.inputs.rocm_hosts import index_for
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import rocm_stream
from pipeline.rocm.index import builds_for
from pipeline.rocm.policy import WEEK_ZONE, is_explicit, parse_policy
from pipeline.rocm.simulate import ReplayRow, replay_moments, replay_rows
from pipeline.rocm.tarball_resolve import load_entries, resolve_from_entries
from pipeline.rocm.versions import RocmBuild
from pipeline.util.timeutil import format_utc

if TYPE_CHECKING:
    from rich.console import Console

MAX_WEEKS = 520


def replay_policy(
    *,
    flag: str | None,
    rocm_version: str | None,
    recorded: Resolution | None,
    fallback: Callable[[], str],
    recorded_where: str = "--resolution",
) -> str:
    """The rule a replay uses: ``--policy``, else the one the old run's resolution
    recorded, else ``fallback()`` (``--rocm-version``, environment, matrix.toml).

    An old nightly ran the rule of its day: ``weekly`` resolutions replay under
    ``weekly`` even after the default became ``weekly-stable``.
    """
    if flag and rocm_version and flag.strip() != rocm_version.strip():
        raise UsageError(f"--policy {flag} and --rocm-version {rocm_version} disagree: give one of them")
    if flag:
        return parse_policy(flag, where="--policy")
    if recorded is not None:
        return parse_policy(recorded.rocm_policy, where=f"{recorded_where}: rocm_policy")
    return fallback()


def _resolution_name(value: str) -> str:
    """How messages name ``--resolution``'s value: the file, or that it was inline JSON."""
    return "--resolution (inline JSON)" if value.lstrip().startswith("{") else f"--resolution {value}"


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="show, for each day of the last N weeks, the cutoff and ROCm version each leg resolved to",
        description="Replay the ROCm resolution of past nightlies from the index's publish times.",
    )
    p.add_argument("--weeks", type=int, default=4, metavar="N", help="how many weeks back (default: 4)")
    p.add_argument("--leg", metavar="LEG", help="only this ROCm leg (default: every ROCm leg)")
    add_resolution_options(p)
    p.add_argument(
        "--policy",
        metavar="RULE",
        help="the rule to replay: weekly-stable, weekly, latest, stable or a version "
        "(default: the --resolution's rule, else as --rocm-version)",
    )
    p.add_argument(
        "--resolution",
        metavar="FILE",
        help="an old run's resolution (path or inline JSON): replay the rule it recorded, "
        "up to its moment unless --now, from its index unless --index-url",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array, one object per day")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.util.console import make_console

    if not 1 <= args.weeks <= MAX_WEEKS:
        raise UsageError(f"--weeks: expected 1 to {MAX_WEEKS}, got {args.weeks}")
    matrix = inputs.require_matrix()
    if args.leg is not None:
        leg = matrix.leg(args.leg)
        if not leg.needs_resolution:
            raise UsageError(f"leg {leg.name!r} is a {leg.backend} leg: only rocm legs resolve a ROCm build")
        legs: list[Leg] = [leg]
    else:
        legs = [leg for leg in matrix.legs.values() if leg.needs_resolution]
        if not legs:
            raise UsageError(f"{matrix.path}: no rocm legs to replay")
    recorded = load_resolution(args.resolution, where="--resolution") if args.resolution else None
    policy = replay_policy(
        flag=args.policy,
        rocm_version=args.rocm_version,
        recorded=recorded,
        fallback=lambda: inputs.rocm_policy,
        recorded_where=_resolution_name(args.resolution or ""),
    )
    now = inputs.now if inputs.given(S.NOW) or recorded is None else recorded.now
    # --index-url, else the recorded run's one index, else the host that published the replay's last night.
    url = inputs.index_url
    if not inputs.given(S.INDEX_URL) and recorded is not None and recorded.index_url:
        url = recorded.index_url
    if url is None:
        url = index_for(
            matrix.rocm.hosts, now.date(), where=f"{matrix.path} rocm.hosts", stream=rocm_stream(policy)
        )
    entries = load_entries(url, policy, fetch_with_status(make_console(inputs.environ, stderr=True), inputs))
    builds: dict[str, Sequence[RocmBuild]] | None = None
    if entries is not None:
        builds = {}
        for leg in legs:
            assert leg.family is not None
            found = builds_for(entries, url, leg.os, leg.family)
            if not found:
                # Raises the one-line "unknown family ... the index has ..." error.
                resolve_from_entries(entries, leg.os, leg.family, policy=policy, now=now, index_url=url)
            builds[leg.name] = found
    names = [leg.name for leg in legs]
    rows = replay_rows(builds, names, policy=policy, moments=replay_moments(now, args.weeks))
    if args.json:
        print(json.dumps([row.to_json() for row in rows], indent=2))
    else:
        print_rows(make_console(inputs.environ), rows, names, policy=policy, url=url)
    return 0


def print_rows(
    console: Console, rows: Sequence[ReplayRow], legs: Sequence[str], *, policy: str, url: str
) -> None:
    from rich.table import Table

    table = Table(title=f"ROCm {policy} replay, {url}", title_justify="left")
    table.add_column("day (San Francisco)")
    table.add_column("run (UTC)")
    table.add_column("cutoff")
    for leg in legs:
        table.add_column(leg)
    previous: ReplayRow | None = None
    for row in rows:
        local = row.moment.astimezone(WEEK_ZONE)
        # One section per Sunday-to-Saturday week: the windows show as blocks.
        if previous is not None and local.weekday() == 6 and not is_explicit(policy):
            table.add_section()
        cells = []
        for leg in legs:
            version = row.versions.get(leg)
            changed = previous is not None and previous.versions.get(leg) != version
            cell = version or "[red]none[/]"
            cells.append(f"[bold yellow]{cell}[/]" if changed and version else cell)
        table.add_row(local.strftime("%a %Y-%m-%d"), format_utc(row.moment), row.cutoff or "-", *cells)
        previous = row
    console.print(table)
    failures = {msg for row in rows for msg in row.errors.values()}
    for message in sorted(failures)[:3]:
        console.print(f"[red]note:[/] {message}")
