"""``python -m pipeline warm-up``: next week's ROCm builds, resolved ahead for the Saturday warm-up run.

Under a weekly policy the first night of a week meets a new TheRock build and
compiles every ROCm leg cold, on the publish path. The build that night takes is
known a day ahead in almost every week: TheRock publishes the Saturday-dated
build the evening before. The warm-up run (``.github/workflows/warm-up.yml``,
Saturdays) resolves each ROCm leg as the next window's first night will, from
the builds published by now, and names the legs whose build changes: each of
those compiles with it (``build`` under this resolution: no bundle) and saves its
ccache under a key of its own that the night's restore prefix finds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pipeline.commands.shared.resolution_args import add_resolution_options, fetch_with_status
from pipeline.github import runner
from pipeline.inputs import settings as S
from pipeline.inputs.resolution_file import (
    DEFAULT_RESOLVED_PATH,
    Resolution,
    ResolvedRocm,
    WarmUp,
    write_resolution,
)
from pipeline.inputs.run_inputs import RunInputs
from pipeline.rocm.policy import next_window_start
from pipeline.util.timeutil import format_utc

if TYPE_CHECKING:
    from pipeline.rocm.index import IndexEntry

_EPILOG = """\
Step outputs on GitHub Actions: warm ("true" when a leg is to be warmed),
legs (those legs, comma-separated: PIPELINE_LEGS for `matrix --github`) and
resolved (the resolution, compact JSON, for the warm-up's build jobs).
Nothing to warm, said in one line, exit 0: [rocm] warm_up = false, a policy
without weekly windows (latest, stable, an explicit version), --rocm-path, or
no leg whose build changes.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "warm-up",
        help="resolve next week's ROCm builds ahead and name the legs to warm (the Saturday warm-up)",
        description="Resolve every ROCm leg as the next policy window's first night will (its moment: the "
        "window's start, Sunday 00:00 San Francisco; its builds: those published by --now), write that "
        "resolution, marked as a warm-up's, to <out>/resolved.json, and name the legs whose build changes.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_resolution_options(p)
    S.add_flag(p, S.OUT)
    S.add_flag(p, S.TAG, help="llama.cpp tag to compile, b<digits> or latest (default: matrix.toml's)")
    S.add_flag(p, S.ROCM_PATH, help="an installed ROCm: nothing to warm ahead")
    p.add_argument(
        "--no-source",
        action="store_true",
        help="resolve the ROCm builds only, not the source tag (no git access)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def _nothing(inputs: RunInputs) -> str | None:
    """Why there is nothing to warm, before any index is read; None: go on."""
    matrix = inputs.require_matrix()
    if not matrix.rocm.warm_up:
        return f"{matrix.path}: [rocm] warm_up is false"
    if next_window_start(inputs.rocm_policy, inputs.now) is None:
        return f"the ROCm policy {inputs.rocm_policy!r} has no weekly window to warm ahead"
    if inputs.rocm_path is not None:
        return f"the rocm legs build with the installed ROCm at {inputs.rocm_path}"
    if not any(leg.needs_resolution for leg in matrix.legs.values()):
        return f"{matrix.path} has no rocm leg"
    return None


def index_as_of(
    fetch: Callable[[str], Sequence[IndexEntry]], moment: datetime
) -> Callable[[str], list[IndexEntry]]:
    """``fetch``, each index read once, as it stood at ``moment``: an entry published later did not exist yet
    (a replayed --now; the live index has none). An entry whose time does not parse is kept: the resolver says
    what is wrong with it if it is the one it needs."""
    from pipeline.errors import IndexFormatError

    read: dict[str, list[IndexEntry]] = {}

    def visible(entry: IndexEntry) -> bool:
        try:
            return entry.published is None or entry.published <= moment
        except IndexFormatError:
            return True

    def fetch_as_of(url: str) -> list[IndexEntry]:
        if url not in read:
            read[url] = [e for e in fetch(url) if visible(e)]
        return read[url]

    return fetch_as_of


def changed_legs(current: Resolution, ahead: Resolution) -> list[str]:
    """The legs whose build the next window changes (matrix order): the ones worth compiling ahead."""
    return [name for name, build in ahead.legs.items() if not _same(current.legs.get(name), build)]


def _same(a: ResolvedRocm | None, b: ResolvedRocm) -> bool:
    return a is not None and (a.version, a.url, a.distribution) == (b.version, b.url, b.distribution)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.run_resolution import resolve_run
    from pipeline.util.console import make_console

    err = make_console(inputs.environ, stderr=True)
    if (reason := _nothing(inputs)) is not None:
        return _report(args, inputs, reason=reason)
    window = next_window_start(inputs.rocm_policy, inputs.now)
    assert window is not None  # _nothing said so
    fetch = index_as_of(fetch_with_status(err, inputs), inputs.now)
    with err.status("resolving this week's ROCm builds"):
        current = resolve_run(inputs, fetch=fetch)
    # The next window's first night: its moment, the builds published by now (the fetch), the tag of now.
    ahead_inputs = dataclasses.replace(inputs, now=window)
    with err.status(f"resolving the ROCm builds of the week from {format_utc(window)}"):
        ahead = resolve_run(ahead_inputs, fetch=fetch, source=not args.no_source)
    ahead.warm_up = WarmUp(
        resolved_at=inputs.now,
        run_url=runner.run_url(inputs.environ, inputs.environ.get(S.GITHUB_REPOSITORY.env_var)),
    )
    legs = changed_legs(current, ahead)
    target = inputs.out / DEFAULT_RESOLVED_PATH.name
    write_resolution(target, ahead)
    err.print(f"wrote {target}", highlight=False)
    return _report(args, inputs, current=current, ahead=ahead, legs=legs)


def _report(
    args: argparse.Namespace,
    inputs: RunInputs,
    *,
    reason: str | None = None,
    current: Resolution | None = None,
    ahead: Resolution | None = None,
    legs: Sequence[str] = (),
) -> int:
    if reason is None and not legs:
        reason = "no rocm leg's build changes in the next window: this week's caches serve it"
    outputs = {"warm": "true" if legs else "false", "legs": ",".join(legs)}
    if ahead is not None:
        outputs["resolved"] = json.dumps(ahead.to_json(), separators=(",", ":"), sort_keys=True)
    for name, value in outputs.items():
        runner.set_output(name, value, env=inputs.environ)
    if args.json:
        doc: dict[str, Any] = {"warm": bool(legs), "legs": list(legs), "reason": reason}
        if ahead is not None and current is not None:
            doc["window"] = format_utc(ahead.now)
            doc["builds"] = {
                name: {"now": current.legs[name].version if name in current.legs else None, "next": b.version}
                for name, b in ahead.legs.items()
            }
        print(json.dumps(doc, indent=2))
        return 0
    if ahead is not None and current is not None:
        print(f"warm-up at {format_utc(inputs.now)} for the window from {format_utc(ahead.now)}:")
        for name, build in ahead.legs.items():
            before = current.legs[name].version if name in current.legs else "-"
            verdict = "warm" if name in legs else "unchanged"
            print(f"  {name:<28} {before:>20} -> {build.version:<20} {verdict}")
    if reason is not None:
        print(f"warm-up: nothing to warm: {reason}")
    else:
        print(f"warm-up: {len(legs)} leg(s) to compile ahead: {', '.join(legs)}")
    return 0
