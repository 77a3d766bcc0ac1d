"""``python -m pipeline report``: one table over all legs of a run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.commands.shared.build_args import add_for_build, settings_from_build_args
from pipeline.errors import PipelineError, UsageError
from pipeline.github import runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
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
        inputs = read_inputs(args, environ=inputs.environ, clock=lambda: inputs.started, need_matrix=False,
                             with_resolution=False)
    threshold = _threshold(args, inputs)
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
            runner.annotate("warning", warning, title="ccache hit rate", env=inputs.environ)
    else:
        report.print_report(console, rows)
    console.print(f"report: {html_path} and {md_path}", highlight=False)
    return 0
