"""What several commands share: argument groups, the index fetch with progress, the comparison table.

Commands never import each other; what two of them need lives here.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.inputs import settings as S

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.bundle.compare import Comparison
    from pipeline.inputs.run_inputs import RunInputs
    from pipeline.release.client import ReleasesClient
    from pipeline.rocm.index import IndexEntry
    from pipeline.rocm.resolve import Fetch


def add_build_arguments(p: argparse.ArgumentParser) -> None:
    """The build's arguments: also what `resolve --for-build` reads a leg's run settings from."""
    p.add_argument("leg", metavar="LEG", help="a leg name from matrix.toml")
    p.add_argument("--source", type=Path, metavar="DIR", help="build this CMake source tree instead of cloning")
    S.add_flag(p, S.OUT)
    S.add_flag(
        p, S.TAG,
        help="llama.cpp tag, b<digits> or latest: what to check out without --source (the run's resolution "
        "wins); with --source, the bundle's tag (default there: git describe)",
    )
    S.add_flag(p, S.CACHE_DIR)
    S.add_flag(p, S.ROCM_VERSION)
    S.add_flag(p, S.NOW)
    S.add_flag(p, S.INDEX_URL)
    S.add_flag(p, S.ROCM_PATH)
    p.add_argument("--cuda-path", type=Path, metavar="DIR", help="use this CUDA install instead of the pinned wheels")
    p.add_argument("--vulkan-sdk", type=Path, metavar="DIR", help="use this Vulkan SDK instead of the pinned archive")
    S.add_flag(p, S.RESOLVED)
    S.add_flag(p, S.SOURCE_ARCHIVE)
    S.add_flag(p, S.REMOTE_CACHE)
    p.add_argument("--no-bundle", action="store_true", help="build only, do not package a bundle")
    S.add_flag(p, S.WAIT_LOCK)


def add_for_build(p: argparse.ArgumentParser, extra: str = "") -> None:
    """``--for-build BUILD_ARGS...``: take the run settings from a leg's build arguments (Nox sessions)."""
    p.add_argument(
        "--for-build",
        nargs=argparse.REMAINDER,
        metavar="BUILD_ARGS",
        help="last: the arguments of a `build` run; the run settings among them (--now, --rocm-version, "
        f"--index-url, --tag, --out, --rocm-path, --matrix) apply{'; ' + extra if extra else ''} (what a Nox session passes on)",
    )


def _parse_build_args(build_args: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """A leg's build arguments as `build` reads them (its global flags after the leg included)."""
    parser = argparse.ArgumentParser(prog="resolve --for-build", add_help=False)
    add_build_arguments(parser)
    S.add_flag(parser, S.MATRIX)
    # The leg name is the build's positional argument; a placeholder when the session gives none.
    return parser.parse_known_args(["-", *[a for a in build_args if a != "--"]])


def out_of_build_args(build_args: Sequence[str], environ: Mapping[str, str]) -> Path:
    """The output folder a leg's build arguments name (``--out``, else its variable, else the default).

    The noxfile's resolve session writes the run's resolution there, where the legs' ``--out`` is.
    """
    build, _ = _parse_build_args(build_args)
    return Path(S.pick(S.OUT, flag=build.out, environ=environ).value)


def settings_from_build_args(args: argparse.Namespace, build_args: list[str]) -> argparse.Namespace:
    """``args`` with the run settings a leg's build arguments carry (``--for-build``)."""
    build, unknown = _parse_build_args(build_args)
    merged = argparse.Namespace(**vars(args))
    for name in (S.NOW.name, S.ROCM_VERSION.name, S.INDEX_URL.name, S.TAG.name, S.OUT.name, S.ROCM_PATH.name, S.MATRIX.name):
        if getattr(build, name, None) is not None:
            setattr(merged, name, getattr(build, name))
    if build.source is not None and hasattr(merged, "no_source"):
        merged.no_source = True
    # The receiving command's own switches may ride along (`nox -s resolve -- --no-source --json`).
    for switch in ("--no-source", "--json"):
        dest = switch[2:].replace("-", "_")
        if switch in unknown and hasattr(merged, dest):
            setattr(merged, dest, True)
    return merged


def add_github_options(p: argparse.ArgumentParser) -> None:
    """--repo and --api-url (prune, publish, alert, release-exists)."""
    S.add_flag(p, S.GITHUB_REPOSITORY)
    S.add_flag(p, S.GITHUB_API_URL)


def github_target(args: argparse.Namespace, inputs: RunInputs) -> tuple[str | None, str]:
    """The repository and API root: flag, else environment, else (for the API) the public one."""
    repo = S.pick(S.GITHUB_REPOSITORY, flag=args.repo, environ=inputs.environ).value
    api_url = S.pick(S.GITHUB_API_URL, flag=args.api_url, environ=inputs.environ).value
    return repo, api_url


def expected_legs(args: argparse.Namespace, inputs: RunInputs) -> list[str]:
    """The legs a run should have built: --legs, else its variable, else every leg of the matrix."""
    from pipeline.errors import UsageError

    all_legs = list(inputs.require_matrix().legs)
    legs = list(S.pick(S.LEGS, flag=args.legs, environ=inputs.environ).value)
    if not legs:
        return all_legs
    if unknown := [leg for leg in legs if leg not in all_legs]:
        raise UsageError(f"--legs: no leg {', '.join(unknown)} in the matrix (legs: {', '.join(all_legs)})")
    return legs


def is_forced(flag: bool | None, environ: Mapping[str, str]) -> bool:
    """A forced rebuild of a released tag: the flag, else the environment's ``true``/``1``/``yes``."""
    if flag is not None:
        return flag
    return bool(S.pick(S.FORCE, environ=environ).value)


def add_resolution_options(p: argparse.ArgumentParser) -> None:
    """--rocm-version, --now, --index-url: shared by resolve and replay."""
    S.add_flag(p, S.ROCM_VERSION)
    S.add_flag(p, S.NOW)
    S.add_flag(p, S.INDEX_URL)


def fetch_with_status(console: Console, inputs: RunInputs) -> Fetch:
    """A fetch function that shows pages and entries read while the index loads."""

    from pipeline.rocm.index_fetch import fetch_index

    def fetch(url: str) -> Sequence[IndexEntry]:
        with console.status(f"reading the ROCm index {url}") as status:

            def on_page(pages: int, entries: int) -> None:
                status.update(f"reading the ROCm index {url}: {pages} page(s), {entries} entries")

            return fetch_index(
                url, on_page=on_page, backoff=inputs.http_backoff, budget=inputs.http_retry_budget,
                on_wait=lambda line: console.print(line, highlight=False, markup=False),
            )

    return fetch


def _size(value: int | None) -> str:
    return "symlink" if value is None else f"{value:,}"


def print_comparison(console: Console, result: Comparison) -> None:
    """Differences first, then the summary line."""
    from rich.table import Table

    console.print(f"A: {result.a}", highlight=False)
    console.print(f"B: {result.b}", highlight=False)
    if result.differing:
        table = Table(title="differing files", title_justify="left")
        table.add_column("file")
        table.add_column("size in A", justify="right")
        table.add_column("size in B", justify="right")
        for path, size_a, size_b in result.differing:
            table.add_row(path, _size(size_a), _size(size_b))
        console.print(table)
    for label, names in (("only in A", result.only_a), ("only in B", result.only_b)):
        for name in names:
            console.print(f"{label}: {name}", highlight=False)
    if result.manifest_differences:
        console.print(f"manifest inputs differ: {', '.join(result.manifest_differences)}", highlight=False)
    style = "green" if result.same else "red"
    verdict = "identical" if result.same else "different"
    console.print(f"[{style}]{result.summary}[/] ({verdict})", highlight=False)


def apply_issue_action(client: ReleasesClient, action: str, *, issue: int | None, title: str, body: str,
                       label: str) -> None:
    """Do what an issue plan decided (alert's, deadman's): open one, comment on it, or comment and close it."""
    if action == "open":
        print(f"opened #{client.create_issue(title, body, label)}")
    elif action == "comment" and issue:
        client.comment(issue, body)
    elif action == "close" and issue:
        client.comment(issue, body)
        client.close_issue(issue)
