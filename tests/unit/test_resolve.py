"""The resolution file and a leg's use of it (no network: the index is an in-memory fetch)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline import run_resolution as resolve
from pipeline.errors import IndexFormatError, NetworkError, ResolutionError, UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.matrix import parse_matrix
from pipeline.inputs.resolution_file import (
    Resolution,
    ResolvedRocm,
    SourceSpec,
    load_resolution,
    write_resolution,
)
from pipeline.rocm.index import IndexEntry, parse_html_index
from tests.support.inputs import make_inputs
from tests.support.therock_index import html_page, nightlies

INDEX = "http://127.0.0.1:9/idx/"
NOW = datetime(2026, 8, 12, 18, tzinfo=UTC)  # weekly cutoff 2026-08-08

MATRIX = parse_matrix(
    {
        "rocm": {"index_url": INDEX, "policy": "weekly"},
        "legs": {
            "rocm-linux": {"backend": "rocm", "os": "linux", "family": "gfx110X-all", "targets": ["gfx1100"]},
            "rocm-win": {"backend": "rocm", "os": "windows", "family": "gfx1151", "targets": ["gfx1151"]},
            "cpu": {"backend": "cpu"},
        },
    },
    Path("matrix.toml"),
)

ENTRIES = [
    IndexEntry(n, t)
    for n, t in nightlies("linux", "gfx110X-all", "10.1.0", date(2026, 8, 1), 12)
    + nightlies("windows", "gfx1151", "7.15.0", date(2026, 8, 1), 12)
]


class FakeIndex:
    """Counts fetches; ``fail`` simulates an unreachable host."""

    def __init__(self, entries: Sequence[IndexEntry] = ENTRIES, fail: bool = False) -> None:
        self.entries, self.fail, self.calls = list(entries), fail, 0

    def __call__(self, url: str) -> Sequence[IndexEntry]:
        self.calls += 1
        assert url == INDEX
        if self.fail:
            raise NetworkError(f"{url}: failed after 5 attempts: [Errno 111] Connection refused")
        return self.entries


@dataclass(frozen=True, kw_only=True)
class LegOptions:
    """A leg run's flags, as `build` takes them (the run's inputs are built from them and the environment)."""

    rocm_version: str | None = None
    resolved: str | None = None
    now: datetime | None = None


def _inputs(matrix: Any, now: datetime | None = None, *, with_resolution: bool = True, **flags: Any) -> Any:
    # The environment as the test left it (monkeypatch), read once like the CLI does.
    return make_inputs(
        matrix, now=now or NOW, environ=dict(os.environ), with_resolution=with_resolution, **flags
    )


def effective_policy(matrix: Any, flag: str | None = None) -> str:
    return str(S.pick(S.ROCM_VERSION, flag=flag, environ=os.environ, matrix=matrix.rocm.policy).value)


def effective_index_url(matrix: Any, flag: str | None = None) -> str:
    return str(S.pick(S.INDEX_URL, flag=flag, environ=os.environ, matrix=matrix.rocm.index_url).value)


def resolve_rocm(
    matrix: Any, leg: str, *, now: datetime, policy: str | None = None, fetch: Any = None
) -> ResolvedRocm:
    # `resolve` takes no resolution: it makes one.
    return resolve.resolve_rocm(
        _inputs(matrix, now, with_resolution=False, rocm_version=policy), leg, fetch=fetch
    )


def resolve_run(matrix: Any, *, now: datetime, fetch: Any = None) -> Resolution:
    return resolve.resolve_run(_inputs(matrix, now, with_resolution=False), fetch=fetch)


def rocm_for_leg(matrix: Any, leg: str, options: LegOptions) -> ResolvedRocm:
    flags = {"rocm_version": options.rocm_version, "resolved": options.resolved}
    return resolve.rocm_for_leg(_inputs(matrix, options.now, **flags), leg)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PIPELINE_RESOLVED", "PIPELINE_ROCM_VERSION", "PIPELINE_ROCM_INDEX_URL", "PIPELINE_NOW"):
        monkeypatch.delenv(var, raising=False)


def test_resolve_run_fetches_once_and_resolves_every_rocm_leg() -> None:
    fetch = FakeIndex()
    res = resolve_run(MATRIX, now=NOW, fetch=fetch)
    assert fetch.calls == 1
    assert res.cutoff == date(2026, 8, 8) and res.rocm_policy == "weekly"
    assert {k: v.version for k, v in res.legs.items()} == {
        "rocm-linux": "10.1.0a20260808",
        "rocm-win": "7.15.0a20260808",
    }
    linux = res.legs["rocm-linux"]
    assert linux.url == INDEX + "therock-dist-linux-gfx110X-all-10.1.0a20260808.tar.gz"
    assert linux.file == "therock-dist-linux-gfx110X-all-10.1.0a20260808.tar.gz"


def test_resolved_json_has_the_issue_fields() -> None:
    resolved = resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex())
    assert resolved.to_json() == {
        "policy": "weekly",
        "cutoff": "20260808",
        "version": "10.1.0a20260808",
        "file": "therock-dist-linux-gfx110X-all-10.1.0a20260808.tar.gz",
        "url": INDEX + "therock-dist-linux-gfx110X-all-10.1.0a20260808.tar.gz",
        "published": "2026-08-08T09:30:00Z",
        "os": "linux",
        "family": "gfx110X-all",
        # The index it came from: here the matrix's one index_url.
        "index_url": INDEX,
    }


def test_explicit_version_resolves_without_the_index() -> None:
    resolved = resolve_rocm(MATRIX, "rocm-win", now=NOW, policy="7.15.0a20250101", fetch=FakeIndex(fail=True))
    assert resolved.version == "7.15.0a20250101" and resolved.published is None and resolved.cutoff is None
    assert resolved.url == INDEX + "therock-dist-windows-gfx1151-7.15.0a20250101.tar.gz"


def test_weekly_needs_the_index() -> None:
    with pytest.raises(NetworkError, match="failed after"):
        resolve_rocm(MATRIX, "rocm-win", now=NOW, fetch=FakeIndex(fail=True))


def test_unknown_family_lists_what_the_index_has() -> None:
    matrix = parse_matrix(
        {
            "rocm": {"index_url": INDEX},
            "legs": {"r": {"backend": "rocm", "family": "gfx110X-al", "targets": ["gfx1100"]}},
        },
        Path("m.toml"),
    )
    with pytest.raises(
        ResolutionError, match=r"unknown ROCm family 'gfx110X-al' for linux .*did you mean 'gfx110X-all'"
    ):
        resolve_rocm(matrix, "r", now=NOW, fetch=FakeIndex())


def test_a_bad_publish_time_fails_the_leg_that_uses_it_only() -> None:
    # Publish times are parsed for the entries a leg uses: the bad windows time is
    # reported by name for the windows leg, and the linux leg resolves as usual.
    bad = "therock-dist-windows-gfx1151-7.15.0a20260807.tar.gz"
    pairs = [
        (n, "soon" if n == bad else t)
        for n, t in nightlies("linux", "gfx110X-all", "10.1.0", date(2026, 8, 1), 12)
        + nightlies("windows", "gfx1151", "7.15.0", date(2026, 8, 1), 12)
    ]
    entries = parse_html_index(html_page(pairs), where=INDEX)
    assert resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex(entries)).version == "10.1.0a20260808"
    with pytest.raises(IndexFormatError, match=rf"^{INDEX}: files\[18\] '{bad}': publish time 'soon'"):
        resolve_run(MATRIX, now=NOW, fetch=FakeIndex(entries))


def test_non_rocm_leg() -> None:
    with pytest.raises(UsageError, match="leg 'cpu' is a cpu leg"):
        resolve_rocm(MATRIX, "cpu", now=NOW, fetch=FakeIndex())


def test_overrides_flag_then_env_then_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    assert effective_policy(MATRIX) == "weekly"
    assert effective_index_url(MATRIX) == INDEX
    monkeypatch.setenv("PIPELINE_ROCM_VERSION", "latest")
    monkeypatch.setenv("PIPELINE_ROCM_INDEX_URL", "http://127.0.0.1:8/env/")
    assert effective_policy(MATRIX) == "latest"
    assert effective_index_url(MATRIX) == "http://127.0.0.1:8/env/"
    assert effective_policy(MATRIX, "10.1.0a20260807") == "10.1.0a20260807"
    assert effective_index_url(MATRIX, "file:///tmp/idx.html") == "file:///tmp/idx.html"
    monkeypatch.setenv("PIPELINE_ROCM_VERSION", "newest")
    with pytest.raises(
        UsageError, match=r"^PIPELINE_ROCM_VERSION: expected 'weekly-stable', 'weekly', 'latest'"
    ):
        effective_policy(MATRIX)
    with pytest.raises(UsageError, match=r"^--index-url: expected an http"):
        effective_index_url(MATRIX, "ftp://x/")


def test_resolution_round_trips_through_a_file_and_inline_json(tmp_path: Path) -> None:
    res = resolve_run(MATRIX, now=NOW, fetch=FakeIndex())
    res.source = SourceSpec(repo="https://example.invalid/llama.cpp", base_tag="b10327", commit="0" * 40)
    path = tmp_path / "out" / "resolved.json"
    write_resolution(path, res)
    assert sorted(p.name for p in path.parent.iterdir()) == ["resolved.json"]  # no temp file left
    from_file = load_resolution(str(path))
    from_inline = load_resolution(path.read_text())
    assert from_file == from_inline == res
    data = json.loads(path.read_text())
    assert data["now"] == "2026-08-12T18:00:00Z" and data["cutoff"] == "20260808"
    assert data["legs"]["rocm-linux"]["version"] == "10.1.0a20260808"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("out/nowhere.json", "PIPELINE_RESOLVED: neither a resolution file nor inline JSON"),
        ("", "neither a resolution file nor inline JSON"),
        ("{not json", r"PIPELINE_RESOLVED \(inline JSON\): malformed JSON at line 1"),
        ('{"now": "soon", "rocm_policy": "weekly", "legs": {}}', r"\.now: not an ISO-8601 moment"),
        ('{"now": "2026-08-12T18:00:00Z", "rocm_policy": "weekly", "legs": []}', "'legs' must be an object"),
        (
            '{"now": "2026-08-12T18:00:00Z", "rocm_policy": "weekly", "legs": {"a": {"version": "x"}}}',
            r"\.legs\.a\.version: not a TheRock version: 'x'",
        ),
        (
            '{"now": "2026-08-12T18:00:00Z", "rocm_policy": "weekly", "legs": {"a": {"version": "10.1.0a20260808"}}}',
            r"\.legs\.a\.policy: expected a non-empty string",
        ),
        (
            '{"format": 99, "now": "2026-08-12T18:00:00Z", "rocm_policy": "weekly", "legs": {}}',
            "format 99 is not 1",
        ),
        # The one URL rule: a malformed IPv6 host is refused when the file is read, never at download.
        (
            json.dumps(
                {
                    "now": "2026-08-12T18:00:00Z",
                    "rocm_policy": "weekly",
                    "legs": {
                        "a": {
                            "version": "10.1.0a20260808",
                            "policy": "weekly",
                            "file": "f.tar.gz",
                            "os": "linux",
                            "family": "gfx1151",
                            "url": "http://[::1/f.tar.gz",
                        }
                    },
                }
            ),
            r"\.legs\.a\.url: expected a well-formed URL .*, got 'http://\[::1/f\.tar\.gz'",
        ),
        (
            json.dumps(
                {
                    "now": "2026-08-12T18:00:00Z",
                    "rocm_policy": "weekly",
                    "legs": {
                        "a": {
                            "version": "10.1.0a20260808",
                            "policy": "weekly",
                            "file": "f.tar.gz",
                            "os": "linux",
                            "family": "gfx1151",
                            "url": "http://h/f.tar.gz",
                            "sha256_url": "https://[x/f.sha256sum",
                        }
                    },
                }
            ),
            r"\.legs\.a\.sha256_url: expected a well-formed URL",
        ),
        (
            '{"now": "2026-08-12T18:00:00Z", "rocm_policy": "weekly", "legs": {}, "index_url": "http://[::1"}',
            r"\.index_url: expected a well-formed URL",
        ),
    ],
)
def test_bad_resolutions(value: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_resolution(value)


def _resolution_json() -> str:
    return json.dumps(resolve_run(MATRIX, now=NOW, fetch=FakeIndex()).to_json())


def test_leg_takes_its_build_from_the_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_RESOLVED", _resolution_json())
    monkeypatch.setenv("PIPELINE_ROCM_INDEX_URL", "http://127.0.0.1:1/never-fetched/")
    # No fetch happens: a fetch would fail (the autouse fixture forbids sockets).
    assert rocm_for_leg(MATRIX, "rocm-win", LegOptions()).version == "7.15.0a20260808"
    assert rocm_for_leg(MATRIX, "rocm-linux", LegOptions(rocm_version="weekly")).version == "10.1.0a20260808"
    assert rocm_for_leg(MATRIX, "rocm-linux", LegOptions(rocm_version="10.1.0a20260808")).policy == "weekly"


def test_options_resolution_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_RESOLVED", "{broken")
    assert (
        rocm_for_leg(MATRIX, "rocm-win", LegOptions(resolved=_resolution_json())).version == "7.15.0a20260808"
    )


def test_contradicting_version_is_refused() -> None:
    opts = LegOptions(resolved=_resolution_json(), rocm_version="10.1.0a20260801")
    with pytest.raises(
        UsageError, match=r"--rocm-version 10\.1\.0a20260801 contradicts the run's resolution"
    ):
        rocm_for_leg(MATRIX, "rocm-linux", opts)
    with pytest.raises(UsageError, match="--rocm-version latest contradicts"):
        rocm_for_leg(MATRIX, "rocm-linux", LegOptions(resolved=_resolution_json(), rocm_version="latest"))


def test_resolution_without_the_leg() -> None:
    partial = Resolution(now=NOW, rocm_policy="weekly", cutoff=date(2026, 8, 8), legs={})
    with pytest.raises(
        ResolutionError, match=r"--resolved: the run's resolution has no leg 'rocm-linux' \(it has: none\)"
    ):
        rocm_for_leg(MATRIX, "rocm-linux", LegOptions(resolved=json.dumps(partial.to_json())))


def test_resolution_for_another_family_is_refused() -> None:
    wrong = ResolvedRocm(
        policy="weekly",
        cutoff=None,
        version="10.1.0a20260808",
        file="f",
        url="http://127.0.0.1/f",
        published=None,
        os="linux",
        family="gfx120X-all",
    )
    res = Resolution(now=NOW, rocm_policy="weekly", cutoff=None, legs={"rocm-linux": wrong})
    with pytest.raises(
        ResolutionError, match=r"was resolved for linux gfx120X-all, but matrix\.toml says linux gfx110X-all"
    ):
        rocm_for_leg(MATRIX, "rocm-linux", LegOptions(resolved=json.dumps(res.to_json())))


def test_a_stale_resolution_file_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    stale = Resolution(
        now=NOW,
        rocm_policy="weekly",
        cutoff=None,
        legs={
            "rocm-linux": ResolvedRocm(
                policy="weekly",
                cutoff=None,
                version="10.1.0a20200101",
                file="f",
                url="http://127.0.0.1/f",
                published=None,
                os="linux",
                family="gfx110X-all",
            )
        },
    )
    write_resolution(Path("out/resolved.json"), stale)
    monkeypatch.setenv("PIPELINE_ROCM_VERSION", "10.1.0a20260805")
    # Standalone, an explicit version needs no index; the stale file's version is not taken.
    monkeypatch.setenv("PIPELINE_ROCM_INDEX_URL", "file:///nonexistent/index.html")
    assert rocm_for_leg(MATRIX, "rocm-linux", LegOptions(now=NOW)).version == "10.1.0a20260805"


# --------------------------------------------------------------------------
# The checksum beside the tarball

LINUX_FILE = "therock-dist-linux-gfx110X-all-10.1.0a20260808.tar.gz"
LISTED = datetime(2026, 8, 8, 9, 31, tzinfo=UTC)


def test_checksum_listed_beside_the_chosen_tarball_is_recorded() -> None:
    entries = [*ENTRIES, IndexEntry(LINUX_FILE + ".sha256sum", LISTED)]
    resolved = resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex(entries))
    assert resolved.file == LINUX_FILE
    assert resolved.sha256_url == INDEX + LINUX_FILE + ".sha256sum"
    assert resolved.to_json()["sha256_url"] == INDEX + LINUX_FILE + ".sha256sum"


@pytest.mark.parametrize(
    "sidecars",
    [
        [],
        # Another build's checksum, another family's, and a digest of another kind.
        [
            "therock-dist-linux-gfx110X-all-10.1.0a20260810.tar.gz.sha256sum",
            "therock-dist-linux-gfx120X-all-10.1.0a20260808.tar.gz.sha256sum",
            LINUX_FILE + ".md5sum",
            LINUX_FILE + ".sha256sum.asc",
        ],
    ],
)
def test_no_checksum_when_the_index_lists_none_for_the_chosen_tarball(sidecars: list[str]) -> None:
    entries = [*ENTRIES, *(IndexEntry(name, LISTED) for name in sidecars)]
    resolved = resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex(entries))
    assert resolved.file == LINUX_FILE and resolved.sha256_url is None
    assert "sha256_url" not in resolved.to_json()


def test_checksum_of_an_s3_key_in_a_folder() -> None:
    key = "v2 nightly/" + LINUX_FILE
    entries = [IndexEntry(key, LISTED), IndexEntry(key + ".sha256sum", LISTED)]
    resolved = resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex(entries))
    assert resolved.url == INDEX + "v2%20nightly/" + LINUX_FILE
    assert resolved.sha256_url == INDEX + "v2%20nightly/" + LINUX_FILE + ".sha256sum"
    # The same file name in another folder is not this tarball's checksum.
    other = [IndexEntry(key, LISTED), IndexEntry("v1/" + LINUX_FILE + ".sha256sum", LISTED)]
    assert resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex(other)).sha256_url is None


def test_explicit_version_without_the_index_has_no_checksum() -> None:
    resolved = resolve_rocm(MATRIX, "rocm-win", now=NOW, policy="7.15.0a20250101", fetch=FakeIndex(fail=True))
    assert resolved.sha256_url is None


def test_checksum_urls_round_trip_through_the_resolution_file(tmp_path: Path) -> None:
    entries = [*ENTRIES, IndexEntry(LINUX_FILE + ".sha256sum", LISTED)]
    res = resolve_run(MATRIX, now=NOW, fetch=FakeIndex(entries))
    assert res.legs["rocm-linux"].sha256_url == INDEX + LINUX_FILE + ".sha256sum"
    assert res.legs["rocm-win"].sha256_url is None
    path = tmp_path / "resolved.json"
    write_resolution(path, res)
    assert load_resolution(str(path)) == res
    assert load_resolution(path.read_text()) == res
    legs = json.loads(path.read_text())["legs"]
    assert legs["rocm-linux"]["sha256_url"] == INDEX + LINUX_FILE + ".sha256sum"
    assert "sha256_url" not in legs["rocm-win"]
    # The leg takes the checksum URL from the run's resolution, without fetching.
    assert rocm_for_leg(MATRIX, "rocm-linux", LegOptions(resolved=str(path))).sha256_url == (
        INDEX + LINUX_FILE + ".sha256sum"
    )


def test_resolution_written_before_checksums_still_loads() -> None:
    # A leg entry as resolve wrote it before checksum URLs were recorded: no "sha256_url" key.
    leg = {
        "policy": "weekly",
        "cutoff": "20260808",
        "version": "10.1.0a20260808",
        "file": LINUX_FILE,
        "url": INDEX + LINUX_FILE,
        "published": "2026-08-08T09:30:00Z",
        "os": "linux",
        "family": "gfx110X-all",
    }
    old = {
        "format": 1,
        "now": "2026-08-12T18:00:00Z",
        "rocm_policy": "weekly",
        "cutoff": "20260808",
        "index_url": INDEX,
        "source": None,
        "legs": {"rocm-linux": leg},
    }
    res = load_resolution(json.dumps(old))
    assert res.legs["rocm-linux"].sha256_url is None
    assert res.legs["rocm-linux"].to_json() == leg


@pytest.mark.parametrize("value", [42, "", "ftp://x/f.sha256sum", ["u"]])
def test_bad_checksum_url_in_a_resolution(value: object) -> None:
    entry = resolve_rocm(MATRIX, "rocm-linux", now=NOW, fetch=FakeIndex()).to_json()
    entry["sha256_url"] = value
    text = json.dumps({"now": "2026-08-12T18:00:00Z", "rocm_policy": "weekly", "legs": {"rocm-linux": entry}})
    with pytest.raises(
        UsageError, match=r"\.legs\.rocm-linux\.sha256_url: expected an http\(s\):// or file:// URL"
    ):
        load_resolution(text)


def test_a_malformed_download_url_is_one_toolchain_error() -> None:
    from pipeline.errors import ToolchainError
    from pipeline.toolchain.installer.download import file_name_of

    with pytest.raises(
        ToolchainError, match=r"^http://\[::1/x\.tar\.gz: malformed URL \(Invalid IPv6 URL\)$"
    ):
        file_name_of("http://[::1/x.tar.gz")
