"""Two bundles' comparison as the console shows it (compare, reproduce)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.bundle.compare import Comparison


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
