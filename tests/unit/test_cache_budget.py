"""The Actions cache budget: bytes by kind in the prune plan, and whether toolchain archives fit."""

from __future__ import annotations

import pytest

from pipeline.actions_cache.budget import budget_by_kind, parse_size, toolchain_archives_fit
from pipeline.actions_cache.cache_keys import cache_key, toolchain_cache_key
from pipeline.actions_cache.prune import plan_prune, summary_markdown
from tests.support.cache_entries import entry

GB = 10**9
GIB = 1024**3
ROCM = "rocm-linux-gfx110X"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5G", 5 * GB),
        ("5Gi", 5 * GIB),
        ("500M", 500 * 10**6),
        ("1.5G", 1_500_000_000),
        ("1k", 1000),
        ("2048", 2048),
    ],
)
def test_sizes_read_as_ccache_reads_them(text: str, expected: int) -> None:
    assert parse_size(text) == expected


def test_default_matrix_keeps_archives_out() -> None:
    # Five legs at 5G each already exceed GitHub's 10 GiB.
    decision = toolchain_archives_fit(dict.fromkeys("abcde", 5 * GB), {}, 10 * GIB)
    assert not decision.cache_archives


def test_archives_are_cached_only_when_everything_fits() -> None:
    ccache = {"cpu": 1 * GB, ROCM: 1 * GB}
    fits = toolchain_archives_fit(ccache, {ROCM: 3 * GB}, 10 * GIB)
    assert fits.cache_archives and fits.archive_bytes == 3 * GB
    assert "fit in the 10.0 GiB limit: toolchain archives cached" in fits.reason
    tight = toolchain_archives_fit(ccache, {ROCM: 9 * GB}, 10 * GIB)
    assert not tight.cache_archives
    assert "exceed the 10.0 GiB limit" in tight.reason


def test_an_archive_of_unknown_size_keeps_every_archive_out() -> None:
    decision = toolchain_archives_fit({"cpu": 1}, {ROCM: None, "other": 1}, 10 * GIB)
    assert not decision.cache_archives and "size is unknown" in decision.reason


def test_budget_sums_by_kind_before_and_after() -> None:
    budget = budget_by_kind(
        [("ccache", 3, False), ("ccache", 4, True), ("toolchain", 10, False)],
        limit_bytes=100, warn_fraction=0.8, other_count=2, other_bytes=5,
    )  # fmt: skip
    rows = {k.kind: (k.count, k.bytes_now, k.bytes_after) for k in budget.kinds}
    assert rows == {"ccache": (2, 7, 3), "toolchain": (1, 10, 10), "other": (2, 5, 5)}
    assert [k.kind for k in budget.kinds] == ["ccache", "toolchain", "other"]
    assert budget.bytes_after == 18 and budget.warnings() == []


def test_prune_plan_shows_the_budget_by_kind_and_warns_before_eviction() -> None:
    entries = [
        entry(1, cache_key(ROCM, "rocm-10.1.0a20260720", "b100"), day=0, size=2 * GIB),
        entry(2, cache_key(ROCM, "rocm-10.1.0a20260727", "b101"), day=7, size=2 * GIB),
        entry(3, cache_key(ROCM, "rocm-10.1.0a20260803", "b102"), day=14, size=2 * GIB),
        entry(4, toolchain_cache_key(ROCM, "rocm-10.1.0a20260803"), day=14, size=5 * GIB),
        entry(5, "someone-elses-cache", day=1, size=GIB),
    ]
    plan = plan_prune(entries, keep=2, limit_bytes=10 * GIB, warn_fraction=0.8)
    kinds = {k["kind"]: (k["bytes_now"], k["bytes_after"]) for k in plan.to_json()["budget"]["kinds"]}
    assert kinds == {"ccache": (6 * GIB, 4 * GIB), "toolchain": (5 * GIB, 5 * GIB), "other": (GIB, GIB)}
    # 10 GiB left after pruning against a 10 GiB limit: GitHub evicts next, ccache included.
    warning = next(w for w in plan.warnings() if w.startswith("after pruning"))
    assert "ccache 4.0 GiB, toolchain 5.0 GiB, other 1.0 GiB" in warning
    summary = summary_markdown(plan, None)
    assert "| toolchain | 1 | 5.0 GiB | 5.0 GiB |" in summary
    assert "| **total** (limit 10.0 GiB) | | | **10.0 GiB** |" in summary


def test_no_budget_warning_when_pruning_brings_the_caches_under_the_fraction() -> None:
    entries = [entry(i, cache_key(ROCM, "rocm-1", f"b{i}"), day=i, size=3 * GIB) for i in range(1, 5)]
    plan = plan_prune(entries, keep=2, limit_bytes=10 * GIB, warn_fraction=0.8)
    assert not any(w.startswith("after pruning") for w in plan.warnings())
