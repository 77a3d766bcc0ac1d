"""The cache budget per leg: 39 legs with two generations each in GitHub's default 10 GiB."""

from __future__ import annotations

from pathlib import Path

from pipeline.actions_cache.leg_budget import matrix_leg_budget, plan_leg_budget
from pipeline.inputs.matrix import load_matrix

ROOT = Path(__file__).resolve().parents[2]
GIB = 1024**3
MIB = 1024**2


def test_each_leg_gets_an_equal_share_of_the_usable_limit() -> None:
    plan = plan_leg_budget(
        [f"leg{i}" for i in range(39)],
        limit_bytes=10 * GIB,
        warn_fraction=0.8,
        keep=2,
        max_size_bytes=5 * 10**9,
        warm_bytes=64 * MIB,
    )
    # 80% of 10 GiB over 78 caches, by hand: 8 GiB / 78.
    assert {s.share_bytes for s in plan.shares} == {8 * GIB // 78}
    assert all(s.fits for s in plan.shares)
    assert plan.needed_bytes == 78 * 64 * MIB


def test_a_share_below_a_warm_build_warns_with_what_the_matrix_needs() -> None:
    plan = plan_leg_budget(
        [f"leg{i}" for i in range(39)],
        limit_bytes=10 * GIB,
        warn_fraction=0.8,
        keep=2,
        max_size_bytes=200 * MIB,
        warm_bytes=150 * MIB,
    )
    assert not any(s.fits for s in plan.shares)
    first = plan.warnings()[0]
    # 8 GiB over 78 caches, by hand: 105.0 MiB.
    assert first.startswith("39 of 39 legs get 105.0 MiB of ccache each within 8.0 GiB")
    # 78 caches x 150 MiB = 11.4 GiB, over the warn fraction: 14.3 GiB of Actions cache.
    assert (
        "a warm build needs 150.0 MiB; 39 legs need 14.3 GiB of Actions cache, or the shared remote cache"
        in first
    )


def test_a_max_size_that_outgrows_the_limit_is_named() -> None:
    plan = plan_leg_budget(
        ["a", "b"], limit_bytes=10 * GIB, warn_fraction=0.8, keep=2, max_size_bytes=5 * GIB, warm_bytes=MIB
    )
    assert plan.warnings() == [
        "[ccache] max_size 5.0 GiB lets 2 legs' 4 generations grow to 20.0 GiB, past cache_limit_bytes 10.0 GiB: "
        "GitHub evicts the least recently used; a max_size of 2.0 GiB stays within it"
    ]
    small = plan_leg_budget(
        ["a", "b"], limit_bytes=10 * GIB, warn_fraction=0.8, keep=2, max_size_bytes=GIB, warm_bytes=MIB
    )
    assert small.warnings() == []


def test_the_shipped_matrix_fits_its_warm_builds_but_not_its_max_size() -> None:
    plan = matrix_leg_budget(load_matrix(ROOT / "matrix.toml"))
    # Every declared leg, all 39 built (the Windows arm64 CUDA leg's one share holds both of its builds).
    assert len(plan.shares) == 39
    assert all(s.fits for s in plan.shares)
    assert [w.split(" lets ")[0] for w in plan.warnings()] == ["[ccache] max_size 4.7 GiB"]


def test_a_leg_with_shards_counts_one_shard_set_more() -> None:
    """After a cold night a sharded leg's shard caches (one cold build's objects, split) stand beside its own
    ccache until the pruner drops them: one generation more in the budget."""
    plan = plan_leg_budget(
        ["a", "b", "c"], limit_bytes=10 * GIB, warn_fraction=0.8, keep=2, max_size_bytes=2 * GIB, warm_bytes=MIB,
        shards={"a": 3, "b": 1},
    )  # fmt: skip
    assert (plan.shard_sets, plan.caches) == (1, 7)
    assert {s.share_bytes for s in plan.shares} == {int(10 * GIB * 0.8) // 7}
    assert plan.to_json()["shard_sets"] == 1
    assert plan.warnings()[0].startswith(
        "[ccache] max_size 2.0 GiB lets 3 legs' 7 generations grow to 14.0 GiB"
    )
    shipped = matrix_leg_budget(load_matrix(ROOT / "matrix.toml"))
    # The 15 CUDA legs built and the 14 ROCm legs: 39 x 2 + 29 caches, and the 14 ROCm legs' warm-up generations,
    # share the usable 8 GiB.
    assert shipped.shard_sets == 29
    assert {s.share_bytes for s in shipped.shares} == {int(10 * GIB * 0.8) // (39 * 2 + 29 + 14)}
