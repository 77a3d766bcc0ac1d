"""``python -m pipeline timings BUILD_DIR``: where a Ninja build's time went."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError
from pipeline.inputs.run_inputs import RunInputs
from pipeline.results import ninjalog
from pipeline.util.fsutil import atomic_write_json, folder_problem


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "timings",
        help="break a Ninja build's time down by device/host/link steps",
        description=(
            "Read BUILD_DIR/.ninja_log (versions 5 to 7, last build only) and print the time per "
            "class of step (device = HIP/CUDA objects, host = other objects, link, other), the "
            "slowest steps and the critical path along the wall clock."
        ),
    )
    p.add_argument("build_dir", metavar="BUILD_DIR", type=Path, help="a directory built with Ninja")
    p.add_argument("--json", action="store_true", help="print the breakdown as JSON (as stored in records)")
    p.add_argument(
        "--trace",
        metavar="FILE",
        type=Path,
        help="also write a Chrome trace JSON (open it in Perfetto or chrome://tracing)",
    )
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    build_dir: Path = args.build_dir
    if (problem := folder_problem(build_dir)) is not None:
        raise UsageError(f"BUILD_DIR {build_dir}: {problem}")
    log = ninjalog.read_log(build_dir / ninjalog.LOG_NAME)
    summary = ninjalog.summarize(log)
    if log.skipped_lines:
        # Cut lines (a killed build) and steps ending before they start are left out, not guessed at.
        print(
            f"{build_dir / ninjalog.LOG_NAME}: {log.skipped_lines} malformed line(s) skipped", file=sys.stderr
        )
    if args.trace:
        atomic_write_json(args.trace, ninjalog.chrome_trace(log.steps))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        from pipeline.report.formats import print_timings
        from pipeline.util.console import make_console

        print_timings(make_console(inputs.environ), summary, title=str(build_dir))
        if args.trace:
            make_console(inputs.environ, stderr=True).print(f"trace written to {args.trace}")
    return 0
