"""``python -m pipeline compare A B``: two bundles, folders or manifests, file by file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.bundle import Comparison, compare
from pipeline.inputs import RunInputs

if TYPE_CHECKING:
    from rich.console import Console

_EPILOG = """\
A and B are bundles (.tar.gz or .zip), folders (an unpacked bundle or any
tree) or manifest.json files. Files are compared by size and sha256; a
bundle's manifest.json is compared as inputs (tag, source commit, toolchain,
CMake arguments), not as a file. Exit code: 0 when identical, 1 when not.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="compare two bundles (or folders, or manifests) file by file",
        description="Compare two bundles file by file: identical, differing (with sizes), only in A, only in B.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("a", metavar="A", type=Path, help="a bundle, folder or manifest.json")
    p.add_argument("b", metavar="B", type=Path, help="a bundle, folder or manifest.json")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run, needs_matrix=False)


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


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    result = compare(args.a, args.b)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        from rich.console import Console

        print_comparison(Console(), result)
    return 0 if result.same else 1
