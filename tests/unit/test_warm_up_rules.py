"""The Saturday warm-up's rules: the next window, the warm key, the pruner keeping it, its budget, its replay."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest

from pipeline.actions_cache.cache_keys import MalformedKeyError, cache_key, parse_key, restore_keys
from pipeline.actions_cache.entries import CacheEntry
from pipeline.actions_cache.leg_budget import matrix_leg_budget
from pipeline.actions_cache.prune import plan_prune
from pipeline.inputs.matrix import parse_matrix
from pipeline.rocm.policy import next_window_start
from pipeline.rocm.simulate import simulate
from tests.support.therock_history import year_of_builds

FAMILY = "gfx110X-all"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- the next window ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "start"),
    [
        # PDT (UTC-7): Sunday 00:00 in San Francisco is 07:00Z.
        ("2026-08-15T18:17:00", "2026-08-16T07:00:00"),
        # A Sunday morning in UTC is still Saturday in San Francisco: the same window ahead.
        ("2026-08-16T06:59:00", "2026-08-16T07:00:00"),
        ("2026-08-16T07:00:00", "2026-08-23T07:00:00"),
        # Across the spring change (Sunday 2026-03-08): the week began in PST, the next one begins in PDT.
        ("2026-03-07T18:17:00", "2026-03-08T08:00:00"),
        ("2026-03-14T18:17:00", "2026-03-15T07:00:00"),
        # Across the autumn change (Sunday 2026-11-01).
        ("2026-10-31T18:17:00", "2026-11-01T07:00:00"),
        ("2026-11-07T18:17:00", "2026-11-08T08:00:00"),
    ],
)
def test_the_next_window_starts_at_the_next_san_francisco_sunday(now: str, start: str) -> None:
    for policy in ("weekly-stable", "weekly"):
        assert next_window_start(policy, utc(now)) == utc(start)


@pytest.mark.parametrize("policy", ["latest", "stable", "10.1.0a20260807", "7.14.0"])
def test_a_policy_without_weekly_windows_has_no_next_window(policy: str) -> None:
    assert next_window_start(policy, utc("2026-08-15T18:17:00")) is None


# -- the warm key ---------------------------------------------------------------------------------------


def test_a_warm_up_key_is_under_the_nights_prefix_but_never_a_nights_key() -> None:
    warm = cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260815", "b7001", warm=True)
    night = cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260815", "b7001")
    assert warm == "llama-ccache--rocm-linux-gfx110X--rocm-10.1.0a20260815--b7001-warm"
    assert warm != night and warm.startswith(restore_keys("rocm-linux-gfx110X", "rocm-10.1.0a20260815")[0])
    parts = parse_key(warm)
    assert parts is not None and parts.warm and parts.tag == "b7001"
    mixed = parse_key(cache_key("cpu", "gcc-12.2.0", "b7001-mix-1a2b3c4", warm=True))
    assert mixed is not None and mixed.warm and mixed.tag == "b7001-mix-1a2b3c4"
    assert parse_key(night) is not None and not parse_key(night).warm  # type: ignore[union-attr]


@pytest.mark.parametrize("tag", ["b7001-warm-warm", "b7001-cold", "b7001-warmer", "warm"])
def test_a_tag_with_another_suffix_is_malformed(tag: str) -> None:
    with pytest.raises(MalformedKeyError):
        parse_key(f"llama-ccache--cpu--gcc-12.2.0--{tag}")


# -- the pruner -----------------------------------------------------------------------------------------


def entry(id_: int, key: str, day: int) -> CacheEntry:
    created = datetime(2026, 8, day, 12, tzinfo=UTC)
    return CacheEntry(
        id=id_,
        key=key,
        ref="refs/heads/main",
        version="v",
        size_in_bytes=1000,
        created_at=created,
        last_accessed_at=created,
    )


LEG = "rocm-linux-gfx110X"
X, Y, Z = "rocm-10.1.0a20260808", "rocm-10.1.0a20260815", "rocm-10.1.0a20260822"


def kept_ids(entries: list[CacheEntry]) -> list[int]:
    plan = plan_prune(entries, keep=2)
    return sorted(e.id for g in plan.groups for e in g.keep)


def test_the_warm_up_is_kept_past_keep_until_a_night_of_its_toolchain_saved() -> None:
    nights = [entry(1, cache_key(LEG, X, "b1"), 13), entry(2, cache_key(LEG, X, "b2"), 14)]
    warm = entry(3, cache_key(LEG, Y, "b2", warm=True), 15)
    # Saturday: the warm-up after Friday's night; then Saturday's night (a manual re-run, too) saves two more.
    saturday = [*nights, warm, entry(4, cache_key(LEG, X, "b3"), 15), entry(5, cache_key(LEG, X, "b4"), 15)]
    assert kept_ids(saturday) == [3, 4, 5]
    # Sunday's night restored it and saved its own: now it is one generation among the others.
    sunday = [*saturday, entry(6, cache_key(LEG, Y, "b5"), 16)]
    assert kept_ids(sunday) == [5, 6]
    assert kept_ids([*sunday, entry(7, cache_key(LEG, Y, "b6"), 17)]) == [6, 7]


def test_an_unused_warm_up_is_dropped_once_a_newer_one_comes() -> None:
    # A late publish: the week took another build than the one warmed (Y); next Saturday warms Z.
    entries = [
        entry(1, cache_key(LEG, X, "b1"), 13),
        entry(2, cache_key(LEG, Y, "b2", warm=True), 15),
        entry(3, cache_key(LEG, "rocm-10.1.0a20260816", "b3"), 16),
        entry(4, cache_key(LEG, "rocm-10.1.0a20260816", "b4"), 20),
        entry(5, cache_key(LEG, Z, "b4", warm=True), 22),
    ]
    assert kept_ids(entries) == [4, 5]


# -- the budget -----------------------------------------------------------------------------------------

BUDGET_MATRIX = """
[rocm]
policy = "{policy}"
warm_up = {warm_up}

[github]
keep = 2
cache_limit_bytes = 8000
cache_warn_fraction = 1.0

[ccache]
max_size = "1G"
warm_size = "1"

[legs.cpu]
backend = "cpu"
os = "linux"

[legs.rocm-linux-gfx110X]
backend = "rocm"
os = "linux"
family = "gfx110X-all"
targets = ["gfx1100"]

[legs.rocm-windows-gfx110X]
backend = "rocm"
os = "windows"
family = "gfx110X-all"
targets = ["gfx1100"]
"""


@pytest.mark.parametrize(
    ("policy", "warm_up", "share", "generations"),
    [
        # 3 legs x 2 generations + one warm-up generation for each of the 2 rocm legs: 8 caches of 1,000 bytes.
        ("weekly-stable", "true", 1000, {"cpu": 2, "rocm-linux-gfx110X": 3, "rocm-windows-gfx110X": 3}),
        ("weekly-stable", "false", 1333, {"cpu": 2, "rocm-linux-gfx110X": 2, "rocm-windows-gfx110X": 2}),
        ("latest", "true", 1333, {"cpu": 2, "rocm-linux-gfx110X": 2, "rocm-windows-gfx110X": 2}),
    ],
)
def test_the_budget_counts_the_warm_up_generation(
    policy: str, warm_up: str, share: int, generations: dict[str, int]
) -> None:
    import tomllib

    text = BUDGET_MATRIX.format(policy=policy, warm_up=warm_up)
    budget = matrix_leg_budget(parse_matrix(tomllib.loads(text), Path("matrix.toml")))
    assert {s.leg: s.generations for s in budget.shares} == generations
    assert {s.share_bytes for s in budget.shares} == {share}


def test_warm_up_must_be_a_boolean() -> None:
    import tomllib

    from pipeline.errors import ConfigError

    text = BUDGET_MATRIX.format(policy="weekly", warm_up='"yes"')
    with pytest.raises(ConfigError, match=r"rocm\.warm_up: expected true or false"):
        parse_matrix(tomllib.loads(text), Path("matrix.toml"))


# -- a year replayed ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_over_a_year_weekly_stable_with_the_warm_up_is_cold_only_after_a_late_saturday(seed: int) -> None:
    builds, late = year_of_builds(seed)
    result = simulate(
        builds,
        policies=["weekly-stable", "latest"],
        start=date(2026, 1, 1),
        end=date(2026, 12, 31),
        cron=time(9, 17, tzinfo=UTC),
        warm_cron=time(18, 17, tzinfo=UTC),
    )
    weekly = result["weekly-stable"]
    without = weekly.cold_runs()
    with_warm_up = weekly.cold_runs(warmed=True)
    # Without it, a cold night nearly every week (a week whose build did not change has none).
    assert len(without) >= 45
    # With it: exactly the first nights after a Saturday whose build came out after the warm-up.
    assert {w.saturday for w in weekly.late_saturdays()} == {
        d for d in late if date(2026, 1, 1) <= d < date(2026, 12, 26)
    }
    assert {r.day - timedelta(days=1) for r in with_warm_up} == {d for d in late if d < date(2026, 12, 26)}
    # Every cold night is a Sunday's (the seed's rule: one a week, on the publish path).
    assert all(r.moment.weekday() == 6 for r in without)
    # latest has no window: no warm-up, the same cold nights either way.
    assert (
        result["latest"].warm_ups == ()
        and result["latest"].cold_runs(warmed=True) == result["latest"].cold_runs()
    )


def test_the_warm_up_note_is_read_once_and_only_for_its_toolchain(tmp_path: Path) -> None:
    from pipeline.ccache.session import WARM_UP_MARKER, note_warm_up, take_warm_up

    note = {
        "toolchain": Y,
        "window": "2026-08-16T07:00:00Z",
        "run_url": None,
        "resolved_at": "x",
        "tag": "b1",
    }
    note_warm_up(tmp_path, note)
    assert take_warm_up(tmp_path, Y) == note
    # Taken: the cache the night saves does not claim the warm-up again.
    assert take_warm_up(tmp_path, Y) is None and not (tmp_path / WARM_UP_MARKER).exists()
    # A note for another toolchain says nothing of this build's cache, and goes too.
    note_warm_up(tmp_path, note)
    assert take_warm_up(tmp_path, Z) is None and not (tmp_path / WARM_UP_MARKER).exists()
    # A damaged note is no warm-up.
    (tmp_path / WARM_UP_MARKER).write_text("{not json")
    assert take_warm_up(tmp_path, Y) is None and not (tmp_path / WARM_UP_MARKER).exists()
