"""The ROCm resolution's flags and the index fetch that shows its progress (resolve, replay)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipeline.inputs import settings as S

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.inputs.run_inputs import RunInputs
    from pipeline.rocm.index import IndexEntry
    from pipeline.rocm.tarball_resolve import Fetch


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
                url,
                on_page=on_page,
                retry=inputs.retry,
                on_wait=lambda line: console.print(line, highlight=False, markup=False),
            )

    return fetch
