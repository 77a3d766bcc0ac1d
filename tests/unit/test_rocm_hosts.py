"""TheRock's hosts by build date ([[rocm.hosts]]): which index each build comes from, fetched once a run.

The two nightly hosts are matrix.toml's: the old CDN until 2026-08-22, the RFC0012 host from 2026-08-23
(ROCm/TheRock 4d76ea1a1, #7547). The indexes are in-memory fetches here; tests/integration/test_rocm_families.py
serves pages shaped like TheRock's own over HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from pipeline import run_resolution
from pipeline.errors import ConfigError, ResolutionError
from pipeline.inputs.matrix import load_matrix, parse_matrix
from pipeline.inputs.rocm_hosts import RocmHost, host_for
from pipeline.rocm.index import IndexEntry
from tests.support.inputs import make_inputs
from tests.support.therock_index import RETIRED_FAMILIES, TODAYS_LINUX_FAMILIES, nightlies

ROOT = Path(__file__).resolve().parents[2]
OLD = "https://rocm.nightlies.amd.com/tarball-multi-arch/"
NEW = "https://nightly.repo.amd.com/rocm/core/tarball/"
HOSTS = [
    {"stream": "nightly", "index_url": OLD, "until": "2026-08-22"},
    {"stream": "nightly", "index_url": NEW, "since": "2026-08-23"},
]


def _entries(families: Sequence[str], start: date, days: int) -> list[IndexEntry]:
    return [
        IndexEntry(n, t) for family in families for n, t in nightlies("linux", family, "10.1.0", start, days)
    ]


# The old CDN: today's names from July to its last day, and the retired names' last builds (February).
OLD_INDEX = [
    *_entries(TODAYS_LINUX_FAMILIES, date(2026, 7, 20), 34),
    *_entries(RETIRED_FAMILIES, date(2026, 2, 1), 20),
]
# The new host: today's names from its first day.
NEW_INDEX = _entries(TODAYS_LINUX_FAMILIES, date(2026, 8, 23), 106)


class Indexes:
    """Each host's index by URL; counts the fetches of each."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __call__(self, url: str) -> Sequence[IndexEntry]:
        self.calls[url] = self.calls.get(url, 0) + 1
        return {OLD: OLD_INDEX, NEW: NEW_INDEX}[url]


def _matrix(families: Sequence[str] = ("gfx110X-all",), **rocm: object) -> object:
    legs = {
        f"rocm-{f}": {"backend": "rocm", "os": "linux", "family": f, "targets": ["gfx1100"]} for f in families
    }
    return parse_matrix({"rocm": {"hosts": HOSTS, **rocm}, "legs": legs}, Path("m.toml"))


def _resolve(
    now: datetime, policy: str = "weekly-stable", families: Sequence[str] = ("gfx110X-all",), **flags: object
) -> tuple[dict[str, dict[str, object]], Indexes]:
    fetch = Indexes()
    inputs = make_inputs(_matrix(families), now=now, rocm_version=policy, **flags)  # type: ignore[arg-type]
    resolution = run_resolution.resolve_run(inputs, fetch=fetch)
    return {name: leg.to_json() for name, leg in resolution.legs.items()}, fetch


def test_the_shipped_hosts_are_the_old_cdn_until_the_switch_and_the_rfc0012_host_after() -> None:
    hosts = load_matrix(ROOT / "matrix.toml").rocm.hosts
    assert host_for(hosts, date(2026, 8, 22)) == RocmHost(
        stream="nightly", index_url=OLD, until=date(2026, 8, 22)
    )
    assert host_for(hosts, date(2026, 8, 23)) == RocmHost(
        stream="nightly", index_url=NEW, since=date(2026, 8, 23)
    )
    assert host_for(hosts, date(2026, 12, 6)).index_url == NEW  # type: ignore[union-attr]


def test_tonight_resolves_from_the_new_host_alone() -> None:
    legs, fetch = _resolve(datetime(2026, 12, 6, 9, 17, tzinfo=UTC))
    leg = legs["rocm-gfx110X-all"]
    # weekly-stable on Sunday 2026-12-06: the Saturday cutoff is 2026-12-05.
    assert leg["version"] == "10.1.0a20261205" and leg["index_url"] == NEW
    assert leg["url"] == NEW + "therock-dist-linux-gfx110X-all-10.1.0a20261205.tar.gz"
    assert fetch.calls == {NEW: 1}


def test_a_replayed_august_night_resolves_from_the_host_that_published_it() -> None:
    legs, fetch = _resolve(datetime(2026, 8, 12, 18, tzinfo=UTC), policy="weekly")
    assert legs["rocm-gfx110X-all"]["version"] == "10.1.0a20260808"
    assert legs["rocm-gfx110X-all"]["index_url"] == OLD and fetch.calls == {OLD: 1}


def test_the_week_of_the_switch_takes_the_old_hosts_build_after_the_new_host() -> None:
    # Wednesday 2026-08-26: the cutoff is Saturday 2026-08-22, the old host's last day; the new host lists the
    # family with builds from 08-23 only.
    legs, fetch = _resolve(datetime(2026, 8, 26, 18, tzinfo=UTC), policy="weekly")
    assert (
        legs["rocm-gfx110X-all"]["version"] == "10.1.0a20260822"
        and legs["rocm-gfx110X-all"]["index_url"] == OLD
    )
    # The host whose range holds the cutoff: the old one; the new one was never needed.
    assert fetch.calls == {OLD: 1}
    # latest on the same night: the new host's first builds.
    legs, fetch = _resolve(datetime(2026, 8, 26, 18, tzinfo=UTC), policy="latest")
    assert legs["rocm-gfx110X-all"]["version"] == "10.1.0a20260826" and fetch.calls == {NEW: 1}


def test_an_explicit_version_comes_from_the_host_of_its_date() -> None:
    legs, fetch = _resolve(datetime(2026, 12, 6, tzinfo=UTC), policy="10.1.0a20260810")
    assert legs["rocm-gfx110X-all"]["url"] == OLD + "therock-dist-linux-gfx110X-all-10.1.0a20260810.tar.gz"
    assert fetch.calls == {OLD: 1}


def test_each_host_is_fetched_once_for_every_leg_of_the_run() -> None:
    families = ("gfx110X-all", "gfx1151", "gfx103X-all", "gfx90a", "gfx908")
    legs, fetch = _resolve(datetime(2026, 12, 6, 9, 17, tzinfo=UTC), families=families)
    assert {leg["index_url"] for leg in legs.values()} == {NEW} and fetch.calls == {NEW: 1}
    assert sorted(leg["family"] for leg in legs.values()) == sorted(families)


def test_a_retired_family_is_an_error_on_the_new_host_not_an_old_build() -> None:
    """The old CDN still lists gfx90X-dcgpu (February's builds): taking one would ship a ten-month-old ROCm."""
    with pytest.raises(ResolutionError) as err:
        _resolve(datetime(2026, 12, 6, 9, 17, tzinfo=UTC), families=("gfx90X-dcgpu",))
    assert err.value.message.startswith(
        f"leg rocm-gfx90X-dcgpu: unknown ROCm family 'gfx90X-dcgpu' for linux in {NEW} (did you mean 'gfx90a' or "
        "'gfx908'?); the index has: "
    )


def test_index_url_overrides_the_hosts() -> None:
    fetch = Indexes()
    inputs = make_inputs(
        _matrix(), now=datetime(2026, 8, 12, 18, tzinfo=UTC), rocm_version="weekly", index_url=NEW
    )  # type: ignore[arg-type]
    with pytest.raises(ResolutionError, match="no ROCm linux gfx110X-all build was published by"):
        # The new host alone, for an August night: nothing dated by the cutoff there, and no fall-back.
        run_resolution.resolve_run(inputs, fetch=fetch)
    assert fetch.calls == {NEW: 1}


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        (
            [
                {"stream": "nightly", "index_url": OLD, "until": "2026-08-21"},
                {"stream": "nightly", "index_url": NEW, "since": "2026-08-23"},
            ],
            "must meet",
        ),
        (
            [
                {"stream": "nightly", "index_url": OLD, "until": "2026-08-23"},
                {"stream": "nightly", "index_url": NEW, "since": "2026-08-23"},
            ],
            "must meet",
        ),
        ([{"stream": "nightly", "index_url": OLD, "until": "2026-8-22"}], "expected a date, YYYY-MM-DD"),
        ([{"stream": "weekly", "index_url": OLD}], "expected one of 'nightly'"),
        ([{"stream": "nightly", "index_url": "ftp://x/"}], "index_url"),
    ],
)
def test_a_bad_hosts_table_is_one_error_naming_it(hosts: list[dict[str, str]], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_matrix({"rocm": {"hosts": hosts}}, Path("m.toml"))
    assert "m.toml" in str(err.value) and message in str(err.value) and "rocm.hosts" in str(err.value)


def test_a_night_no_host_covers_names_the_hosts() -> None:
    fetch = Indexes()
    matrix = parse_matrix(
        {
            "rocm": {"hosts": [{"stream": "nightly", "index_url": NEW, "since": "2026-08-23"}]},
            "legs": {"r": {"backend": "rocm", "family": "gfx110X-all", "targets": ["gfx1100"]}},
        },
        Path("m.toml"),
    )
    inputs = make_inputs(matrix, now=datetime(2026, 8, 12, tzinfo=UTC), rocm_version="weekly")
    with pytest.raises(
        ConfigError,
        match=r"m.toml rocm.hosts: no nightly host publishes builds dated 2026-08-08 or "
        r"earlier \(the hosts: https://nightly.repo.amd.com/rocm/core/tarball/ "
        r"\(2026-08-23 on\)\); --index-url names one",
    ):
        run_resolution.resolve_run(inputs, fetch=fetch)
    assert fetch.calls == {}
