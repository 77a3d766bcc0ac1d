"""The fourteen ROCm legs against TheRock as it publishes today: two hosts by date, today's family names,
the stable stream.

The shipped matrix.toml is resolved as it is (its [rocm_families], its ROCm legs and its [[rocm.hosts]]), with
only the source repo and the hosts' URLs pointed at local servers, each serving a page shaped like the one
TheRock's own generator writes (tests/support/therock_index.py, ``tarball_index_page``): the old CDN with the
builds up to 2026-08-22 (and the retired family names' last builds), the RFC0012 nightly host with today's
families from 2026-08-23 on, the RFC0012 stable host with the releases 7.12.0 to 10.0.0.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from tests.support.gitrepos import commit_files, init_repo, tag
from tests.support.httpserver import LocalServer, Response
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.therock_index import (
    RETIRED_FAMILIES,
    TODAYS_LINUX_FAMILIES,
    TODAYS_WINDOWS_FAMILIES,
    nightlies,
    tarball_index_page,
)

pytestmark = pytest.mark.integration

OLD_HOST = "https://rocm.nightlies.amd.com/tarball-multi-arch/"
NEW_HOST = "https://nightly.repo.amd.com/rocm/core/tarball/"
STABLE_HOST = "https://stable.repo.amd.com/rocm/core/tarball/"
# TheRock's stable releases as the issue's survey lists them; the publish dates are this test's (10.0.0's is
# after the night of 2026-12-06, so that night cannot see it).
RELEASES = {
    "7.12.0": datetime(2026, 5, 14, 17, tzinfo=UTC),
    "7.13.0": datetime(2026, 7, 30, 17, tzinfo=UTC),
    "7.14.0": datetime(2026, 10, 22, 17, tzinfo=UTC),
    "10.0.0": datetime(2026, 12, 10, 17, tzinfo=UTC),
}
TODAY = {"linux": TODAYS_LINUX_FAMILIES, "windows": TODAYS_WINDOWS_FAMILIES}


def _entries(start: date, days: int, *, retired: bool = False) -> list[tuple[str, datetime]]:
    out = [
        e
        for os_name, families in TODAY.items()
        for fam in families
        for e in nightlies(os_name, fam, "10.1.0", start, days)
    ]
    if retired:
        out += [
            e
            for os_name in TODAY
            for fam in RETIRED_FAMILIES
            for e in nightlies(os_name, fam, "7.11.0", date(2026, 2, 1), 20)
        ]
    return out


@pytest.fixture
def hosts(http_server: LocalServer, tmp_path: Path) -> Path:
    """The shipped matrix.toml pointed at the local hosts and a local upstream; returns its path."""
    http_server.route(
        "/old/",
        Response(
            200,
            tarball_index_page(_entries(date(2026, 7, 20), 34, retired=True)).encode(),
            {"Content-Type": "text/html"},
        ),
    )
    http_server.route(
        "/new/",
        Response(
            200, tarball_index_page(_entries(date(2026, 8, 23), 106)).encode(), {"Content-Type": "text/html"}
        ),
    )
    stable = [
        (f"therock-dist-{os_name}-{fam}-{version}.tar.gz", when)
        for os_name, families in TODAY.items()
        for fam in families
        for version, when in RELEASES.items()
    ]
    http_server.route(
        "/stable/", Response(200, tarball_index_page(stable).encode(), {"Content-Type": "text/html"})
    )
    upstream = tmp_path / "upstream"
    init_repo(upstream)
    when = datetime(2026, 1, 5, tzinfo=UTC)
    commit_files(upstream, {"CMakeLists.txt": "project(x)\n"}, "base", when=when)
    tag(upstream, "b100", when=when)
    text = (ROOT / "matrix.toml").read_text(encoding="utf-8")
    text = text.replace('repo = "https://github.com/ggml-org/llama.cpp"', f'repo = "{upstream}"', 1)
    for shipped, local in ((OLD_HOST, "/old/"), (NEW_HOST, "/new/"), (STABLE_HOST, "/stable/")):
        assert text.count(f'index_url = "{shipped}"') == 1, shipped
        text = text.replace(f'index_url = "{shipped}"', f'index_url = "{http_server.url(local)}"')
    (tmp_path / "matrix.toml").write_text(text)
    return tmp_path / "matrix.toml"


def _resolve(matrix: Path, now: str, *more: str) -> dict[str, dict[str, str]]:
    proc = run_pipeline(
        ["--matrix", str(matrix), "resolve", "--now", now, *more],
        cwd=matrix.parent,
        env={"PIPELINE_HTTP_BACKOFF": "0"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    legs: dict[str, dict[str, str]] = json.loads((matrix.parent / "out" / "resolved.json").read_text())[
        "legs"
    ]
    return legs


def test_tonight_every_rocm_leg_resolves_a_family_therock_publishes_now_from_the_new_host(
    hosts: Path, http_server: LocalServer
) -> None:
    legs = _resolve(hosts, "2026-12-06T09:17:00Z")
    assert len(legs) == 14 and {leg.split("-")[1] for leg in legs} == {"linux", "windows"}
    for leg, entry in legs.items():
        # weekly-stable (the default) on Sunday: Saturday 2026-12-05's build, from the host that published it.
        assert entry["family"] in TODAY[entry["os"]], leg
        assert entry["version"] == "10.1.0a20261205", leg
        assert entry["index_url"] == http_server.url("/new/"), leg
        assert entry["url"] == http_server.url(
            f"/new/therock-dist-{entry['os']}-{entry['family']}-10.1.0a20261205.tar.gz"
        )
    assert {entry["family"] for entry in legs.values()} == {
        "gfx1151",
        "gfx1150",
        "gfx120X-all",
        "gfx110X-all",
        "gfx103X-all",
        "gfx90a",
        "gfx908",
    }
    # One read of the new host for the fourteen legs; the old host was not needed.
    assert http_server.hits("/new/") == 1 and http_server.hits("/old/") == 0


def test_a_night_before_the_switch_replays_from_the_host_that_published_it(
    hosts: Path, http_server: LocalServer
) -> None:
    legs = _resolve(hosts, "2026-08-12T18:00:00Z")
    assert {entry["version"] for entry in legs.values()} == {"10.1.0a20260808"}
    assert {entry["index_url"] for entry in legs.values()} == {http_server.url("/old/")}
    assert http_server.hits("/old/") == 1 and http_server.hits("/new/") == 0


def test_a_retired_family_fails_its_leg_naming_todays_families(hosts: Path) -> None:
    text = hosts.read_text().replace(
        '[rocm_families.gfx90a]\ntherock = "gfx90a"', '[rocm_families.gfx90a]\ntherock = "gfx90X-dcgpu"'
    )
    hosts.write_text(text)
    proc = run_pipeline(
        ["--matrix", str(hosts), "resolve", "--now", "2026-12-06T09:17:00Z"],
        cwd=hosts.parent,
        env={"PIPELINE_HTTP_BACKOFF": "0"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 6, out
    assert (
        "unknown ROCm family 'gfx90X-dcgpu' for linux" in out
        and "(did you mean 'gfx90a' or 'gfx908'?)" in out
    )
    assert "Traceback" not in out


def test_tonight_against_the_old_host_alone_every_family_is_said_stale_once_or_fails(
    hosts: Path, http_server: LocalServer
) -> None:
    """What a release engineer who kept the old CDN got: August's ROCm every night, with exit 0 and no word."""
    env = {"PIPELINE_HTTP_BACKOFF": "0", "PIPELINE_ROCM_INDEX_URL": http_server.url("/old/")}
    args = ["--matrix", str(hosts), "resolve", "--now", "2026-12-06T09:17:00Z"]
    proc = run_pipeline(args, cwd=hosts.parent, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: ROCm ")]
    # Fourteen legs, fourteen os/family pairs: each said once, each 106 days old.
    assert len(warnings) == len(set(warnings)) == 14, proc.stderr
    assert all(
        "(10.1.0a20260822, from " in w and "is 106 days old (over rocm.max_age_days = 14)" in w
        for w in warnings
    ), warnings
    resolved = hosts.parent / "out" / "resolved.json"
    assert resolved.is_file()
    resolved.unlink()

    failed = run_pipeline(args, cwd=hosts.parent, env={**env, "PIPELINE_ROCM_STALE": "fail"})
    assert failed.returncode == 14, failed.stdout + failed.stderr
    assert (
        failed.stderr.count("error: ") == 1
        and "106 days old" in failed.stderr
        and "Traceback" not in failed.stderr
    )
    assert not resolved.exists(), "no resolution is written for legs to build with"


def test_the_stable_policy_takes_the_newest_release_published_by_the_night_from_the_stable_host(
    hosts: Path, http_server: LocalServer
) -> None:
    legs = _resolve(hosts, "2026-12-06T09:17:00Z", "--rocm-version", "stable")
    assert len(legs) == 14
    for leg, entry in legs.items():
        # 10.0.0 is published on 2026-12-10: after this night. A release has no build date, so it is never stale.
        assert (entry["version"], entry["policy"], entry["cutoff"]) == ("7.14.0", "stable", None), leg
        assert entry["url"] == http_server.url(
            f"/stable/therock-dist-{entry['os']}-{entry['family']}-7.14.0.tar.gz"
        )
        assert entry["index_url"] == http_server.url("/stable/")
    assert (
        http_server.hits("/stable/") == 1
        and http_server.hits("/new/") == 0
        and http_server.hits("/old/") == 0
    )
    # The night after 10.0.0 was published, the numerically newest release: 10.0.0, not 7.14.0 (text order).
    later = _resolve(hosts, "2026-12-13T09:17:00Z", "--rocm-version", "stable")
    assert {entry["version"] for entry in later.values()} == {"10.0.0"}
    # A replayed summer night: what was out then.
    summer = _resolve(hosts, "2026-08-12T18:00:00Z", "--rocm-version", "stable")
    assert {entry["version"] for entry in summer.values()} == {"7.13.0"}


def test_an_explicit_release_resolves_on_the_stable_host_and_a_missing_one_names_its_neighbours(
    hosts: Path, http_server: LocalServer
) -> None:
    legs = _resolve(hosts, "2026-12-06T09:17:00Z", "--rocm-version", "7.13.0")
    assert {(entry["version"], entry["policy"]) for entry in legs.values()} == {("7.13.0", "7.13.0")}
    assert {entry["index_url"] for entry in legs.values()} == {http_server.url("/stable/")}
    args = [
        "--matrix",
        str(hosts),
        "resolve",
        "--leg",
        "rocm-linux-gfx110X",
        "--now",
        "2026-12-06T09:17:00Z",
        "--rocm-version",
        "7.13.1",
    ]
    proc = run_pipeline(args, cwd=hosts.parent, env={"PIPELINE_HTTP_BACKOFF": "0"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 6, out
    assert (
        "ROCm linux gfx110X-all 7.13.1 is not in the index; nearest available: 7.12.0, 7.13.0, 7.14.0" in out
    ), out
    assert "Traceback" not in out
