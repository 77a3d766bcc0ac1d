"""``python -m pipeline report``: one table over all legs of a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipeline.commands.shared.build_args import add_for_build, settings_from_build_args
from pipeline.commands.shared.github_args import add_github_options, github_target
from pipeline.errors import PipelineError, UsageError
from pipeline.github import runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import GITHUB_RUN_ID, GITHUB_SERVER_URL
from pipeline.results.record import RECORD_NAME, LegRecord
from pipeline.util.fsutil import atomic_write_text, folder_problem

_EPILOG = """\
The cache alarm: a leg whose ccache hit rate is under [report] hit_rate_warning
(matrix.toml) while its toolchain did not change gets a warning (a GitHub
warning annotation on Actions). Whether the toolchain changed is taken from
the record's own ccache.previous_toolchain when the build recorded it (the
toolchain that filled the restored cache), else from the same leg's record in
--previous DIR (e.g. last run's records, downloaded as an artifact). When
neither tells, the column shows "?" and no warning is raised: a cold cache
with a new toolchain is expected, not an alarm.

On GitHub Actions (GITHUB_ACTIONS=true) the markdown table is also appended
to $GITHUB_STEP_SUMMARY. The exit code is 0 even with warnings.

--history N draws the last N finished runs of the nightly workflow instead:
per leg, the hit rate and the build time night by night, a star on each night
its toolchain changed, from the record-<leg> artifacts every leg job uploads
(GITHUB_TOKEN with actions: read). It writes OUT/history.html (or --html) and,
on Actions, a line in the step summary that points at it.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "report",
        help="summarise leg records: hit rates, wall time, device/host split (console, markdown, HTML)",
        description="Render one table over the legs of a run from their records, "
        "as a console table, a markdown summary and a self-contained HTML page with charts.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "records",
        metavar="RECORDS",
        nargs="*",
        type=Path,
        help=f"record files, or leg folders holding {RECORD_NAME} (default: OUT/*/{RECORD_NAME})",
    )
    S.add_flag(p, S.OUT, help="the run's output folder: where records are found and reports written")
    p.add_argument(
        "--previous",
        metavar="DIR",
        type=Path,
        help=f"last run's output folder (DIR/<leg>/{RECORD_NAME}) to tell whether a toolchain changed",
    )
    p.add_argument("--html", metavar="FILE", type=Path, help="HTML page to write (default: OUT/report.html)")
    p.add_argument("--markdown", metavar="FILE", type=Path, help="markdown to write (default: OUT/report.md)")
    p.add_argument(
        "--hit-rate-warning",
        metavar="RATE",
        type=float,
        help="alarm threshold 0..1 (default: [report] hit_rate_warning from the matrix)",
    )
    p.add_argument(
        "--history",
        metavar="N",
        type=int,
        help="draw the last N nightly runs from their record artifacts instead (see below)",
    )
    p.add_argument(
        "--workflow",
        default="nightly.yml",
        metavar="FILE",
        help="with --history: the workflow whose runs are read (default: nightly.yml)",
    )
    add_github_options(p)
    add_for_build(p)
    p.set_defaults(func=run, needs_matrix=False)


def find_records(paths: list[Path], out: Path) -> list[Path]:
    """Record files named on the command line (files or leg folders), else OUT/*/record.json."""
    if not paths:
        found = sorted(out.glob(f"*/{RECORD_NAME}"))
        if not found:
            raise UsageError(
                f"no records found: {out}/*/{RECORD_NAME} matches nothing (pass RECORDS or --out DIR)"
            )
        return found
    files = []
    for p in paths:
        files.append(p / RECORD_NAME if p.is_dir() else p)
    return files


def read_previous(folder: Path) -> dict[str, LegRecord]:
    """Last run's records by leg name (unreadable ones are left out: they only inform)."""
    if (problem := folder_problem(folder)) is not None:
        raise UsageError(f"--previous {folder}: {problem}")
    previous: dict[str, LegRecord] = {}
    for path in sorted(folder.glob(f"*/{RECORD_NAME}")):
        try:
            record = LegRecord.read(path)
        except PipelineError:
            continue
        previous[record.leg] = record
    return previous


def _threshold(args: argparse.Namespace, inputs: RunInputs) -> float:
    if args.hit_rate_warning is not None:
        if not 0 <= args.hit_rate_warning <= 1:
            raise UsageError(f"--hit-rate-warning {args.hit_rate_warning}: expected a rate between 0 and 1")
        return float(args.hit_rate_warning)
    return inputs.require_matrix().report.hit_rate_warning


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.report import formats as report
    from pipeline.util.console import make_console

    if args.for_build is not None:
        from pipeline.inputs.run_inputs import read_inputs

        args = settings_from_build_args(args, args.for_build)
        inputs = read_inputs(
            args,
            environ=inputs.environ,
            clock=lambda: inputs.started,
            need_matrix=False,
            with_resolution=False,
        )
    threshold = _threshold(args, inputs)
    if args.history is not None:
        return run_history(args, inputs, threshold)
    out = inputs.out
    records = [LegRecord.read(p) for p in find_records(args.records, out)]
    previous = read_previous(args.previous) if args.previous else {}
    rows = report.leg_rows(records, previous, threshold)
    generated = inputs.started.strftime("%Y-%m-%d %H:%M UTC")

    markdown = report.render_markdown(rows, threshold=threshold)
    html_path: Path = args.html or out / "report.html"
    md_path: Path = args.markdown or out / "report.md"
    atomic_write_text(html_path, report.render_html(records, rows, generated=generated, threshold=threshold))
    atomic_write_text(md_path, markdown)

    console = make_console(inputs.environ)
    if inputs.in_actions:
        runner.append_summary(markdown, env=inputs.environ)
        console.print(report.console_table(rows))
        for warning in report.warnings_of(rows):
            runner.annotate("warning", warning, title="nightly report", env=inputs.environ)
    else:
        report.print_report(console, rows)
    console.print(f"report: {html_path} and {md_path}", highlight=False)
    return 0


def run_history(args: argparse.Namespace, inputs: RunInputs, threshold: float) -> int:
    """``report --history N``: the last N nights of every leg, as a page of plots."""
    from pipeline.github import rest
    from pipeline.report.history import leg_history, summary_lines
    from pipeline.report.history_fetch import HistoryClient, fetch_nights
    from pipeline.report.history_page import render_history_html

    if args.history < 1:
        raise UsageError(f"--history {args.history}: expected a number of nights, 1 or more")
    if args.records or args.previous:
        raise UsageError("--history reads the nights from GitHub: it takes no RECORDS and no --previous")
    repo, api_url = github_target(args, inputs)
    if not repo:
        raise UsageError("--history needs the repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    token = rest.token_from_env(inputs.environ, permission="actions: read")
    client = HistoryClient(
        repo, token, api_url=api_url, retry=inputs.retry, on_wait=lambda line: print(line, file=sys.stderr)
    )
    nights = fetch_nights(
        client, args.workflow, args.history, on_night=lambda line: print(f"history: {line}")
    )
    if not nights:
        # A repository's first night has no history yet: said, and no failure of the job that asked.
        print(f"history: {repo}: no finished run of {args.workflow} left record artifacts: nothing to draw")
        return 0
    series = leg_history(nights)
    page: Path = args.html or inputs.out / "history.html"
    generated = inputs.started.strftime("%Y-%m-%d %H:%M UTC")
    atomic_write_text(
        page,
        render_history_html(series, nights=len(nights), generated=generated, threshold=threshold, repo=repo),
    )
    for line in summary_lines(series, threshold):
        print(line)
    if inputs.in_actions:
        link = (
            f"{inputs.environ.get(GITHUB_SERVER_URL, 'https://github.com')}/{repo}/actions/runs/"
            f"{inputs.environ.get(GITHUB_RUN_ID, '')}#artifacts"
        )
        runner.append_summary(
            f"History of the last {len(nights)} nights, per leg (hit rate, build time, toolchain changes): "
            f"`{page.name}` in this run's [report artifact]({link}).\n",
            env=inputs.environ,
        )
    print(f"history: {page} ({len(nights)} nights, {len(series)} legs)")
    return 0
