"""A year of TheRock nightly publishing, generated: holes, late publishes, the Saturdays the warm-up misses."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time, timedelta

from pipeline.rocm.policy import next_window_start
from pipeline.rocm.versions import RocmBuild, tarball_name

FAMILY = "gfx110X-all"


def year_of_builds(seed: int) -> tuple[list[RocmBuild], set[date]]:
    """A year of nightly builds: each out the evening before its date (03:00Z), some days missing, about one in
    forty published late (up to two days after its date). Also the Saturdays whose build came out after
    the 18:17Z warm-up but before the next week began."""
    rng = random.Random(seed)
    builds: list[RocmBuild] = []
    late_saturdays: set[date] = set()
    day = date(2025, 12, 1)
    while day < date(2026, 12, 31):
        if rng.random() < 0.06:  # a hole: no build that day
            day += timedelta(days=1)
            continue
        published = datetime.combine(day, time(3), tzinfo=UTC)
        if rng.random() < 0.025 or (day.weekday() == 5 and rng.random() < 0.1):
            published += timedelta(hours=rng.choice([6, 16, 20, 30, 44]))
        version = f"10.1.0a{day:%Y%m%d}"
        name = tarball_name("linux", FAMILY, version)
        builds.append(RocmBuild(name=name, os="linux", family=FAMILY, version=version, date=day,
                                published=published, url=f"http://127.0.0.1/{name}"))  # fmt: skip
        warm_up = datetime.combine(day, time(18, 17), tzinfo=UTC)
        window = next_window_start("weekly-stable", warm_up)
        assert window is not None
        if day.weekday() == 5 and warm_up < published < window:
            late_saturdays.add(day)
        day += timedelta(days=1)
    return builds, late_saturdays
