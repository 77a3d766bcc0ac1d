"""The prune plan: grouping by (ref, leg) across toolchains and tags, newest kept, foreign untouched."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.actions_cache.cache_keys import cache_key, shard_cache_key, toolchain_cache_key
from pipeline.actions_cache.entries import CacheEntry
from pipeline.actions_cache.prune import (
    api_requests,
    apply_plan,
    plan_prune,
    plan_with_cost,
    summary_markdown,
)
from pipeline.errors import GitHubError, UsageError
from tests.support.cache_entries import entry


def test_toolchain_generations_and_tags_share_one_group() -> None:
    # The old bug: grouping by the full restore prefix kept every toolchain generation forever.
    entries = [
        entry(1, cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260720", "b100"), day=0),
        entry(2, cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260727", "b101-mix-1a2b3c4"), day=7),
        entry(3, cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260803", "b102"), day=14),
        entry(4, cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260803", "b103-mix-abcdef0"), day=15),
    ]
    plan = plan_prune(entries, keep=2)
    assert len(plan.groups) == 1
    assert [e.id for e in plan.groups[0].keep] == [4, 3]
    assert sorted(e.id for e in plan.to_delete) == [1, 2]
    assert plan.bytes_freed == 200


def test_newest_by_created_at_whatever_the_listing_order() -> None:
    entries = [entry(i, cache_key("cpu", "gcc-12.2.0", f"b{i}"), day=i) for i in range(10)]
    random.Random(7).shuffle(entries)
    plan = plan_prune(entries, keep=3)
    assert [e.id for e in plan.groups[0].keep] == [9, 8, 7]
    assert sorted(e.id for e in plan.to_delete) == list(range(7))


def test_a_tie_on_created_at_keeps_the_higher_id() -> None:
    entries = [entry(i, cache_key("cpu", "gcc", f"b{i}")) for i in (5, 9, 2)]
    assert [e.id for e in plan_prune(entries, keep=1).groups[0].keep] == [9]


def test_groups_are_per_ref_and_leg_and_kind() -> None:
    entries = [
        entry(1, cache_key("cpu", "gcc", "b1"), day=1),
        entry(2, cache_key("cpu", "gcc", "b2"), day=2),
        entry(3, cache_key("cpu", "gcc", "b1"), ref="refs/pull/7/merge", day=0),
        entry(4, cache_key("cpu-avx", "gcc", "b1"), day=0),
        entry(5, toolchain_cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260720"), day=0),
        entry(6, toolchain_cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260727"), day=7),
        entry(7, cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260720", "b1"), day=0),
    ]
    plan = plan_prune(entries, keep=1)
    groups = {(g.ref, g.kind, g.leg): [e.id for e in g.keep] for g in plan.groups}
    assert groups == {
        ("refs/heads/main", "ccache", "cpu"): [2],
        ("refs/heads/main", "ccache", "cpu-avx"): [4],
        ("refs/pull/7/merge", "ccache", "cpu"): [3],
        ("refs/heads/main", "toolchain", "rocm-linux-gfx110X"): [6],
        ("refs/heads/main", "ccache", "rocm-linux-gfx110X"): [7],
    }
    assert [e.id for e in plan.to_delete] == [1, 5]


def test_foreign_and_malformed_keys_are_never_deleted() -> None:
    entries = [
        entry(1, "setup-python-Linux-x64-3.12", day=0),
        entry(2, "node-cache-Linux-npm", day=1),
        entry(3, "llama-ccache-cpu-gcc-b1", day=0),  # an older scheme: looks like ours
        entry(4, "llama-ccache--cpu--gcc--latest", day=0),
        entry(5, cache_key("cpu", "gcc", "b1"), day=0),
    ]
    plan = plan_prune(entries, keep=1)
    assert plan.to_delete == []
    assert plan.foreign_count == 2
    assert [e.id for e in plan.malformed] == [3, 4]
    warnings = plan.warnings()
    assert len(warnings) == 2
    assert "llama-ccache-cpu-gcc-b1" in warnings[0] and "left alone" in warnings[0]


def test_duplicates_in_the_listing_count_once() -> None:
    e = entry(1, cache_key("cpu", "gcc", "b1"))
    plan = plan_prune([e, e, entry(2, cache_key("cpu", "gcc", "b2"), day=1)], keep=1)
    assert plan.total_count == 2
    assert [x.id for x in plan.to_delete] == [1]


def test_size_warning_from_the_configured_fraction() -> None:
    entries = [entry(i, cache_key("cpu", "gcc", f"b{i}"), day=i, size=300) for i in range(3)]
    quiet = plan_prune(entries, keep=1, limit_bytes=1000, warn_fraction=0.95)
    assert not quiet.near_limit and quiet.warnings() == []
    loud = plan_prune(entries, keep=1, limit_bytes=1000, warn_fraction=0.8)
    assert loud.near_limit
    assert loud.bytes_after == 300
    assert "90%" in loud.warnings()[0] and "after pruning" in loud.warnings()[0]


def test_keep_must_be_positive() -> None:
    with pytest.raises(UsageError, match="--keep"):
        plan_prune([], keep=0)


def test_requests_count_pages_and_deletes() -> None:
    entries = [entry(i, cache_key("cpu", "gcc", f"b{i}"), day=i) for i in range(250)]
    plan, requests = plan_with_cost(entries, keep=2)
    assert requests == 3 + 248 == 3 + len(plan.to_delete)
    assert api_requests(plan_prune([], keep=2)) == 1


def test_apply_stops_at_the_first_error_and_reports_progress() -> None:
    entries = [entry(i, cache_key("cpu", "gcc", f"b{i}"), day=i, size=10) for i in range(6)]
    plan = plan_prune(entries, keep=1)
    calls: list[int] = []

    def delete(ident: int) -> bool:
        calls.append(ident)
        if len(calls) == 3:
            raise GitHubError("DELETE: HTTP 403 Forbidden")
        return ident != 3  # id 3 was already gone

    result = apply_plan(plan, delete)
    assert calls == [4, 3, 2]
    assert [e.id for e in result.deleted] == [4]
    assert [e.id for e in result.already_gone] == [3]
    assert result.failed is not None and result.failed.id == 2
    assert result.bytes_freed == 10
    assert "stopped at cache 2" in summary_markdown(plan, result)


def test_summary_markdown_lists_groups_and_totals() -> None:
    entries = [entry(i, cache_key("cpu", "gcc", f"b{i}"), day=i, size=1024 * 1024) for i in range(3)]
    plan = plan_prune(entries, keep=2)
    dry = summary_markdown(plan, None)
    assert "(dry run)" in dry
    assert "| `refs/heads/main` | ccache | cpu |" in dry
    assert "Would free 1.0 MiB" in dry
    applied = summary_markdown(plan, apply_plan(plan, lambda _i: True))
    assert "Freed 1.0 MiB" in applied and "(dry run)" not in applied


refs = st.sampled_from(["refs/heads/main", "refs/heads/dev", "refs/pull/1/merge"])
leg_names = st.sampled_from(["cpu", "cpu-avx", "cuda", "rocm-linux-gfx110X"])
gens = st.sampled_from(["gcc-12", "gcc-13", "rocm-10.1.0a20260720", "rocm-10.1.0a20260727"])


@given(
    st.lists(st.tuples(refs, leg_names, gens, st.integers(0, 10**6), st.integers(0, 1000)), max_size=60),
    st.integers(1, 4),
    st.randoms(),
)
def test_plan_properties(rows: list[tuple[str, str, str, int, int]], keep: int, rnd: random.Random) -> None:
    entries = [
        entry(i, cache_key(leg, tc, f"b{tag}"), ref=ref, day=day / 10)
        for i, (ref, leg, tc, tag, day) in enumerate(rows)
    ]
    foreign = [entry(10_000 + i, f"other-{i}", day=i) for i in range(3)]
    listing = entries + foreign
    rnd.shuffle(listing)
    plan = plan_prune(listing, keep=keep)
    deleted = {e.id for e in plan.to_delete}
    assert not deleted & {e.id for e in foreign}
    for g in plan.groups:
        members = [e for e in entries if (e.ref, e.key.split("--")[1]) == (g.ref, g.leg)]
        assert len(g.keep) == min(keep, len(members))
        assert len(g.keep) + len(g.delete) == len(members)
        if g.delete:
            assert min(e.created_at for e in g.keep) >= max(e.created_at for e in g.delete)
    # The order the server lists caches in never changes the plan.
    assert plan_prune(sorted(listing, key=lambda e: e.id), keep=keep) == plan


# --------------------------------------------------------------------------
# Local caches (prune --local): the pure plan


def _entry(cache: str, name: str, size: int, days_ago: float, *, held: bool = False) -> CacheEntry:
    from pipeline.toolchain.local_caches import CacheEntry

    return CacheEntry(
        cache=cache, name=name, paths=(), size=size, last_used=1_000_000_000 - days_ago * 86400, held=held
    )


def test_local_plan_removes_by_age_then_least_recently_used_per_cache() -> None:
    from pipeline.toolchain.local_caches import plan_local

    entries = [
        _entry("downloads", "a", 10, 40),
        _entry("downloads", "b", 10, 5),
        _entry("downloads", "c", 10, 3),
        _entry("downloads", "d", 10, 2),
        _entry("toolchains", "t", 25, 2),
    ]
    plan = plan_local(entries, now=1_000_000_000, max_age_days=30, max_bytes=25)
    # a: 40 days old. Of b, c, d (20 bytes fit in 25): d and c kept, b over the limit. Each cache has its own limit.
    assert [(e.name, why.split(" ")[0]) for e, why in plan.remove] == [("b", "over"), ("a", "unused")]
    assert sorted(e.name for e in plan.kept) == ["c", "d", "t"]


def test_local_plan_never_removes_a_held_or_recently_used_entry() -> None:
    from pipeline.toolchain.local_caches import plan_local

    entries = [
        _entry("toolchains", "held", 10, 90, held=True),
        _entry("toolchains", "today", 10, 0.5),
        _entry("toolchains", "old", 10, 90),
    ]
    plan = plan_local(entries, now=1_000_000_000, max_age_days=30, max_bytes=1)
    assert [e.name for e, _ in plan.remove] == ["old"]
    assert sorted(e.name for e, _ in plan.in_use) == ["held", "today"]


def test_holding_a_lock_marks_its_thing_used(tmp_path: Path) -> None:
    import os

    from pipeline.processes.locks import hold

    lock = tmp_path / ".rocm.lock"
    lock.write_text("")
    os.utime(lock, (1_000_000_000, 1_000_000_000))
    with hold(lock, what="rocm", since=None):
        pass
    assert lock.stat().st_mtime > 1_000_000_000 + 86400


# --------------------------------------------------------------------------
# Shard caches (pipeline/actions_cache/shard_prune.py): a set goes once it served, or once a newer set replaces it.


def _shard_set(
    first_id: int,
    leg: str,
    toolchain: str,
    tag: str,
    *,
    day: float,
    count: int = 2,
    ref: str = "refs/heads/main",
) -> list[CacheEntry]:
    return [
        entry(first_id + i, shard_cache_key(leg, toolchain, tag, i + 1, count), ref=ref, day=day + i / 100)
        for i in range(count)
    ]


def test_a_shard_set_goes_once_its_leg_saved_the_ccache_it_served() -> None:
    served = _shard_set(10, "cuda", "cuda-13.2.86", "b100", day=1, count=3)
    entries = [*served, entry(20, cache_key("cuda", "cuda-13.2.86", "b100"), day=1.5)]
    plan = plan_prune(entries, keep=2)
    (shards,) = [g for g in plan.groups if g.kind == "shard"]
    assert (shards.leg, shards.keep) == ("cuda", ())
    assert sorted(e.id for e in shards.delete) == [10, 11, 12]
    # The leg's own ccache is the ccache rule's: kept.
    assert [e.id for g in plan.groups if g.kind == "ccache" for e in g.keep] == [20]


def test_the_newest_unserved_set_of_a_leg_stays_and_older_sets_go() -> None:
    # b100's set served (its ccache exists), b101's did not (its leg failed), b102's is this run's, its build
    # not saved yet: only b102's stays. Another ref's and another leg's sets are theirs to keep.
    entries = [
        *_shard_set(10, "rocm-linux-gfx110X", "rocm-10.1.0a20260803", "b100", day=0),
        entry(19, cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260803", "b100"), day=0.5),
        *_shard_set(20, "rocm-linux-gfx110X", "rocm-10.1.0a20260810", "b101", day=7),
        *_shard_set(30, "rocm-linux-gfx110X", "rocm-10.1.0a20260810", "b102", day=8),
        *_shard_set(40, "rocm-linux-gfx110X", "rocm-10.1.0a20260810", "b102", day=8, ref="refs/pull/9/merge"),
        *_shard_set(50, "rocm-linux-gfx1151", "rocm-10.1.0a20260810", "b101", day=7),
    ]
    random.Random(3).shuffle(entries)
    plan = plan_prune(entries, keep=2)
    shard_groups = {(g.ref, g.leg): g for g in plan.groups if g.kind == "shard"}
    main = shard_groups[("refs/heads/main", "rocm-linux-gfx110X")]
    assert [e.id for e in main.keep] == [30, 31]
    assert sorted(e.id for e in main.delete) == [10, 11, 20, 21]
    assert [e.id for e in shard_groups[("refs/pull/9/merge", "rocm-linux-gfx110X")].keep] == [40, 41]
    assert [e.id for e in shard_groups[("refs/heads/main", "rocm-linux-gfx1151")].keep] == [50, 51]
    # A ccache saved on another ref serves nothing here: caches are scoped by ref.
    assert not shard_groups[("refs/pull/9/merge", "rocm-linux-gfx110X")].delete
    # The budget counts them as a kind of their own, now and after.
    kinds = {k.kind: k for k in plan.budget.kinds}
    assert kinds["shard"].count == 10 and kinds["shard"].bytes_after == 600


def test_a_shard_key_that_does_not_parse_is_left_alone_and_reported() -> None:
    plan = plan_prune([entry(1, "llama-shard--cuda--t--b1--5of3")], keep=1)
    assert [e.id for e in plan.malformed] == [1] and not plan.to_delete
