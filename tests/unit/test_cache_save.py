"""The save decision after a leg's build, and the eviction arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.ccache.save import decide_save, evict_args, new_entries
from pipeline.ccache.save_stats import recorded_ccache_dir, save_inputs
from pipeline.results.record import LegRecord


@pytest.mark.parametrize(
    ("stats", "minimum", "save", "added"),
    [
        ({"hits": 0, "misses": 120}, 1, True, 120),  # cold: everything is new
        ({"hits": 787, "misses": 0}, 1, False, 0),  # fully warm: the restored cache is as good
        ({"hits": 786, "misses": 1}, 1, True, 1),
        ({"hits": 786, "misses": 1}, 5, False, 1),
        ({"hits": 10, "misses": 0, "remote_hits": 10}, 1, True, 10),  # remote hits land in the local cache
        ({"hits": 10, "misses": 0}, 0, True, 0),  # 0: always save
        # Warm from the shards' caches: no key holds that cache yet, so it is saved (docs/caches.md, shards).
        ({"hits": 787, "misses": 0, "shards_merged": {"added": 1574}}, 1, True, 1574),
    ],
)
def test_decide_save(stats: dict[str, int], minimum: int, save: bool, added: int) -> None:
    decision = decide_save(stats, minimum)
    assert (decision.save, decision.new_entries) == (save, added)
    assert str(added) in decision.reason


def test_a_record_without_statistics_is_not_saved() -> None:
    decision = decide_save({}, 1)
    assert not decision.save and "no ccache statistics" in decision.reason


def test_new_entries_ignores_junk_counts() -> None:
    assert new_entries({"misses": -3, "remote_hits": True}) == 0
    assert new_entries({"misses": "7"}) == 0
    assert new_entries({"misses": 1, "shards_merged": "many"}) == 1
    assert new_entries({"misses": 1, "shards_merged": {"added": -2}}) == 1


def test_evict_args() -> None:
    assert evict_args(7) == ["--evict-older-than", "604800s"]
    assert evict_args(0.5) == ["--evict-older-than", "43200s"]
    assert evict_args(0) is None


@pytest.mark.parametrize(
    ("ccache", "folder"),
    [
        ({"ccache_dir": "/c/new"}, "/c/new"),
        # An older record names the folder "cache_dir".
        ({"cache_dir": "/c/old"}, "/c/old"),
        ({"ccache_dir": "/c/new", "cache_dir": "/c/old"}, "/c/new"),
        ({"ccache_dir": ""}, None),
        ({"cache_dir": 7}, None),
        ({}, None),
    ],
)
def test_the_recorded_ccache_folder(ccache: dict[str, object], folder: str | None) -> None:
    assert recorded_ccache_dir(ccache) == folder


def test_an_old_record_still_names_its_ccache_folder(tmp_path: Path) -> None:
    LegRecord(
        leg="cpu", backend="cpu", os="linux", started="2026-08-04T09:17:00Z",
        ccache={"cache_dir": "/w/ccache/cpu", "hits": 1, "misses": 3},
    ).write(tmp_path / "cpu" / "record.json")  # fmt: skip
    got = save_inputs(tmp_path / "cpu")
    assert (got.ccache_dir, got.ccache["misses"]) == ("/w/ccache/cpu", 3)
