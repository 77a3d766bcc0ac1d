"""A family an index lacks gets its real neighbours as the suggestion, not the nearest spelling.

The families are TheRock's as published since its rename of 2026-02-25 (ROCm/TheRock 8f17ad65b, #2869):
gfx90X-dcgpu split into gfx90a and gfx908, gfx103X-dgpu renamed gfx103X-all, gfx1152 added.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.errors import ResolutionError
from pipeline.names import family_suggestion
from pipeline.rocm.index import IndexEntry
from pipeline.rocm.tarball_resolve import resolve_from_entries

TODAY = [
    "gfx101X-dgpu",
    "gfx103X-all",
    "gfx110X-all",
    "gfx1150",
    "gfx1151",
    "gfx1152",
    "gfx120X-all",
    "gfx908",
    "gfx90a",
    "gfx94X-dcgpu",
    "gfx950-dcgpu",
]


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        # Retired: its successors (by spelling gfx950-dcgpu is nearest, another GPU; by architecture gfx900, gfx906
        # and gfx90c too, which it never covered).
        ("gfx90X-dcgpu", " (did you mean 'gfx90a' or 'gfx908'?)"),
        ("gfx103X-dgpu", " (did you mean 'gfx103X-all'?)"),
        ("gfx1153", " (did you mean 'gfx1150' or 'gfx1151' or 'gfx1152'?)"),
        ("gfx942", " (did you mean 'gfx94X-dcgpu'?)"),
        # A typo after the architecture keeps it; nothing of the same architecture is no suggestion (the nearest
        # spelling of gfx600 is gfx90a, another GPU).
        ("gfx110X-al", " (did you mean 'gfx110X-all'?)"),
        ("gfx600", ""),
    ],
)
def test_the_suggestion_is_the_same_gpu_architecture(asked: str, said: str) -> None:
    assert family_suggestion(asked, TODAY) == said


def test_a_leg_of_a_renamed_family_is_one_error_with_the_index_s_families() -> None:
    entries = [
        IndexEntry(
            f"therock-dist-linux-{family}-7.12.0a20261201.tar.gz", datetime(2026, 12, 1, 3, tzinfo=UTC)
        )
        for family in TODAY
    ]
    with pytest.raises(ResolutionError) as err:
        resolve_from_entries(
            entries,
            "linux",
            "gfx90X-dcgpu",
            policy="latest",
            now=datetime(2026, 12, 6, tzinfo=UTC),
            index_url="https://nightly.example/tarball/",
        )
    assert err.value.message == (
        "unknown ROCm family 'gfx90X-dcgpu' for linux in https://nightly.example/tarball/ (did you mean 'gfx90a' or "
        "'gfx908'?); the index has: " + ", ".join(sorted(TODAY))
    )
