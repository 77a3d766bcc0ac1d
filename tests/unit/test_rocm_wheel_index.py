"""TheRock's wheel index (pure): PEP 691 / 503 pages, file names, complete builds, the policies over them."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.errors import IndexFormatError, ResolutionError, UsageError
from pipeline.inputs.matrix import Matrix, parse_matrix
from pipeline.inputs.resolution_file import ResolvedRocm
from pipeline.rocm.wheel_index import (
    IndexFile,
    fits,
    parse_file_name,
    parse_html_page,
    parse_json_page,
    parse_project_page,
    projects_for,
    wheel_builds,
)
from pipeline.rocm.wheel_resolve import resolve_wheels

FAMILY = "gfx110X-all"
INDEX = "https://wheels.example/v2/gfx110X-all/"
SHA = "ab" * 32
PLAT = "py3-none-manylinux_2_28_x86_64"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def files_of(project: str, version: str, uploaded: datetime | None, *, tag: str = PLAT) -> IndexFile:
    dist = project.replace("-", "_")
    name = f"{dist}-{version}-{tag}.whl" if project != "rocm" else f"rocm-{version}-py3-none-any.whl"
    return IndexFile(file=name, url=f"{INDEX}../files/{name}", sha256=SHA, published=uploaded)


def pages_for(builds: dict[str, datetime | None]) -> dict[str, list[IndexFile]]:
    return {p: [files_of(p, v, t) for v, t in builds.items()] for p in projects_for(FAMILY)}


def test_the_four_projects_of_a_family_are_normalized_as_pep_503_says() -> None:
    assert projects_for("gfx110X-all") == (
        "rocm",
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-libraries-gfx110x-all",
    )


def test_file_names_and_platforms() -> None:
    assert parse_file_name("rocm_sdk_core-10.1.0a20260807-py3-none-manylinux_2_28_x86_64.whl") == (
        "rocm-sdk-core",
        "10.1.0a20260807",
        True,
        ("py3", "none", "manylinux_2_28_x86_64"),
    )
    assert parse_file_name("rocm-10.1.0a20260807.tar.gz") == ("rocm", "10.1.0a20260807", False, ("", "", ""))
    assert parse_file_name("rocm-10.1.0a20260807.tar.gz.sha256") is None
    assert fits(("py3", "none", "manylinux_2_28_x86_64"), "linux")
    assert not fits(("py3", "none", "manylinux_2_28_x86_64"), "windows")
    assert fits(("py3", "none", "win_amd64"), "windows")
    assert fits(("py3", "none", "any"), "windows") and fits(("py3", "none", "any"), "linux")
    assert not fits(("py3", "none", "manylinux_2_28_aarch64"), "linux")
    assert not fits(("py2", "none", "any"), "linux")


def test_a_pep_691_page_gives_urls_hashes_and_pep_700_upload_times() -> None:
    doc = {
        "meta": {"api-version": "1.1"},
        "name": "rocm-sdk-core",
        "files": [
            {
                "filename": "a.whl",
                "url": "../../files/a.whl",
                "hashes": {"sha256": SHA.upper()},
                "upload-time": "2026-08-07T09:30:00.123456Z",
            },
            {
                "filename": "b.whl",
                "url": "https://cdn.example/b.whl",
                "hashes": {"md5": "x"},
                "yanked": "broken",
            },
        ],
    }
    where = INDEX + "rocm-sdk-core/"
    got = parse_project_page(json.dumps(doc), "application/vnd.pypi.simple.v1+json", where=where)
    assert got[0] == IndexFile(
        file="a.whl",
        url="https://wheels.example/v2/files/a.whl",
        sha256=SHA,
        published=datetime(2026, 8, 7, 9, 30, 0, 123456, tzinfo=UTC),
    )
    assert got[1].sha256 is None and got[1].yanked and got[1].url == "https://cdn.example/b.whl"


def test_a_pep_503_page_gives_the_hash_from_the_fragment_and_no_time() -> None:
    html = (
        '<html><body><a href="/files/a.whl#sha256=' + SHA + '">a.whl</a>'
        '<a href="b.whl" data-yanked="">b.whl</a></body></html>'
    )
    got = parse_html_page(html, where=INDEX + "rocm/")
    assert got == [
        IndexFile(file="a.whl", url="https://wheels.example/files/a.whl", sha256=SHA, published=None),
        IndexFile(file="b.whl", url=INDEX + "rocm/b.whl", sha256=None, published=None, yanked=True),
    ]


def test_a_page_that_is_not_an_index_is_one_error_naming_it() -> None:
    with pytest.raises(IndexFormatError, match=r"rocm/: not a PEP 691 project page"):
        parse_json_page('{"projects": []}', where=INDEX + "rocm/")
    with pytest.raises(IndexFormatError, match=r"malformed JSON at line 1"):
        parse_json_page("{", where=INDEX + "rocm/")


def test_a_build_needs_every_project_with_a_hash_and_its_time_is_the_last_upload() -> None:
    pages = pages_for({"7.0.0a20250102": utc(2025, 1, 2, 9), "7.0.0a20250104": utc(2025, 1, 4, 9)})
    # 20250104's devel wheel went up a day later: the build was complete then.
    pages["rocm-sdk-devel"][1] = files_of("rocm-sdk-devel", "7.0.0a20250104", utc(2025, 1, 5, 1))
    # A version whose libraries wheel is missing is no build; nor one without a hash.
    pages["rocm-sdk-core"].append(files_of("rocm-sdk-core", "7.0.0a20250106", utc(2025, 1, 6)))
    builds = wheel_builds(pages, os_name="linux", family=FAMILY, index_url=INDEX)
    assert [(b.build.version, b.build.published) for b in builds] == [
        ("7.0.0a20250102", utc(2025, 1, 2, 9)),
        ("7.0.0a20250104", utc(2025, 1, 5, 1)),
    ]
    assert [f.project for f in builds[0].files] == list(projects_for(FAMILY))
    assert wheel_builds(pages, os_name="windows", family=FAMILY, index_url=INDEX) == []
    unhashed = {
        p: [IndexFile(file=f.file, url=f.url, sha256=None, published=f.published) for f in fs]
        for p, fs in pages.items()
    }
    assert wheel_builds(unhashed, os_name="linux", family=FAMILY, index_url=INDEX) == []


# Saturday 2025-01-04's build was uploaded on Sunday 2025-01-05 (San Francisco), after the week began.
LATE = {
    "7.0.0a20250103": utc(2025, 1, 3, 9),
    "7.0.0a20250104": utc(2025, 1, 5, 17),
    "7.0.0a20250107": utc(2025, 1, 7, 9),
}


@pytest.mark.parametrize(
    ("policy", "now", "expected"),
    [
        ("weekly-stable", utc(2025, 1, 8, 12), "7.0.0a20250103"),  # published before the week began only
        ("weekly", utc(2025, 1, 8, 12), "7.0.0a20250104"),  # the Saturday cutoff, whatever the upload time
        ("weekly", utc(2025, 1, 5, 12), "7.0.0a20250103"),  # replay: Sunday morning, before the late upload
        ("latest", utc(2025, 1, 8, 12), "7.0.0a20250107"),
        ("latest", utc(2025, 1, 6, 12), "7.0.0a20250104"),  # replay: 20250107 did not exist yet
        ("7.0.0a20250104", utc(2025, 1, 8, 12), "7.0.0a20250104"),
    ],
)
def test_the_policies_and_the_replay_rule_pick_among_wheel_builds(
    policy: str, now: datetime, expected: str
) -> None:
    got = resolve_wheels("linux", FAMILY, policy=policy, now=now, index_url=INDEX, pages=pages_for(LATE))
    assert got.version == expected and got.distribution == "wheels"
    assert [w.project for w in got.wheels] == list(projects_for(FAMILY))
    assert all(expected in w.file and w.sha256 == SHA for w in got.wheels)


def test_pep_503_builds_without_times_count_from_their_build_date() -> None:
    pages = pages_for(dict.fromkeys(LATE))
    # No upload times: weekly-stable takes the newest build dated on or before the cutoff.
    got = resolve_wheels(
        "linux", FAMILY, policy="weekly-stable", now=utc(2025, 1, 8, 12), index_url=INDEX, pages=pages
    )
    assert got.version == "7.0.0a20250104" and got.published is None
    got = resolve_wheels(
        "linux", FAMILY, policy="latest", now=utc(2025, 1, 6, 12), index_url=INDEX, pages=pages
    )
    assert got.version == "7.0.0a20250104"


def test_an_explicit_version_missing_from_the_wheel_index_lists_the_nearest() -> None:
    with pytest.raises(
        ResolutionError, match=r"7\.0\.0a20250105 is not in the index; nearest available: .*20250104"
    ):
        resolve_wheels(
            "linux",
            FAMILY,
            policy="7.0.0a20250105",
            now=utc(2025, 1, 8),
            index_url=INDEX,
            pages=pages_for(LATE),
        )
    with pytest.raises(ResolutionError, match=r"no version has a windows file"):
        resolve_wheels(
            "windows", FAMILY, policy="latest", now=utc(2025, 1, 8), index_url=INDEX, pages=pages_for(LATE)
        )


def test_a_wheel_resolution_round_trips_and_its_identity_follows_the_hashes() -> None:
    got = resolve_wheels(
        "linux", FAMILY, policy="latest", now=utc(2025, 1, 8, 12), index_url=INDEX, pages=pages_for(LATE)
    )
    data = json.loads(json.dumps(got.to_json()))
    assert ResolvedRocm.from_json(data, where="legs.x") == got
    assert got.identity.startswith("rocm-7.0.0a20250107-wheels-")
    other = dict(
        data, wheels=[dict(w, sha256="cd" * 32) if i == 0 else w for i, w in enumerate(data["wheels"])]
    )
    assert ResolvedRocm.from_json(other, where="legs.x").identity != got.identity
    with pytest.raises(UsageError, match=r"legs\.x\.wheels\[0\]\.sha256: expected 64 lower-case hex digits"):
        ResolvedRocm.from_json(dict(data, wheels=[dict(data["wheels"][0], sha256="nope")]), where="legs.x")
    with pytest.raises(UsageError, match=r"legs\.x\.wheels: a wheels build lists its files"):
        ResolvedRocm.from_json(dict(data, wheels=[]), where="legs.x")


def test_a_resolution_from_before_the_rename_still_reads() -> None:
    # Such a file names the distribution "source"; now "source" is llama.cpp's alone.
    got = resolve_wheels(
        "linux", FAMILY, policy="latest", now=utc(2025, 1, 8, 12), index_url=INDEX, pages=pages_for(LATE)
    )
    data = got.to_json()
    assert data["distribution"] == "wheels" and "source" not in data
    old = {("source" if k == "distribution" else k): v for k, v in data.items()}
    assert ResolvedRocm.from_json(old, where="legs.x") == got
    with pytest.raises(UsageError, match=r"legs\.x\.source: expected 'tarball' or 'wheels'"):
        ResolvedRocm.from_json(dict(old, source="wheel"), where="legs.x")


def _matrix(rocm: dict[str, object]) -> Matrix:
    legs = {"rocm-a": {"backend": "rocm", "family": FAMILY, "targets": ["gfx1100"]}}
    return parse_matrix({"rocm": rocm, "legs": legs}, Path("m.toml"))


def test_matrix_rocm_distribution_and_wheel_index() -> None:
    from pipeline.errors import ConfigError

    m = _matrix({})
    # TheRock's index per stream since 2026-08-23, for every GPU: the policy's stream fills it.
    assert (m.rocm.distribution, m.rocm.wheel_index_for(FAMILY)) == (
        "tarball",
        "https://nightly.repo.amd.com/rocm/whl-next/",
    )
    assert m.rocm.wheel_index_for(FAMILY, "stable") == "https://stable.repo.amd.com/rocm/whl-next/"
    m = _matrix({"distribution": "wheels", "wheel_index_url": "http://127.0.0.1:8/simple/{family}/"})
    assert m.rocm.wheel_index_for("gfx1151") == "http://127.0.0.1:8/simple/gfx1151/"
    with pytest.raises(ConfigError, match=r"m\.toml: rocm\.distribution.*'tarball', 'wheels'"):
        _matrix({"distribution": "wheel"})
    # The key's older name: "source" is llama.cpp's alone. One line, the file, the key and its new name.
    renamed = r"^m\.toml: rocm\.source: renamed to rocm\.distribution, with the same values: rename the key$"
    with pytest.raises(ConfigError, match=renamed):
        _matrix({"source": "wheels"})
    with pytest.raises(ConfigError, match=r"m\.toml: rocm\.wheel_index_url"):
        _matrix({"wheel_index_url": "ftp://x/{family}/"})


def test_a_leg_refuses_a_resolution_made_from_the_other_distribution() -> None:
    from pipeline.inputs.resolution_file import Resolution
    from pipeline.run_resolution import rocm_for_leg
    from tests.support.inputs import make_inputs

    tarball = ResolvedRocm(
        policy="latest",
        cutoff=None,
        version="7.0.0a20250107",
        file="t.tar.gz",
        url="https://x.example/t.tar.gz",
        published=None,
        os="linux",
        family=FAMILY,
    )
    resolution = Resolution(now=utc(2025, 1, 8), rocm_policy="latest", cutoff=None, legs={"rocm-a": tarball})
    inputs = replace(
        make_inputs(_matrix({"distribution": "wheels"})), resolution=resolution, resolution_where="r.json"
    )
    with pytest.raises(
        ResolutionError,
        match=r"r\.json: leg 'rocm-a' was resolved from tarball, but m\.toml says rocm\.distribution = 'wheels'",
    ):
        rocm_for_leg(inputs, "rocm-a")


def test_a_file_url_index_is_read_from_its_folders(tmp_path: Path) -> None:
    from pipeline.rocm.wheel_resolve import fetch_page

    for project, files in pages_for({"7.0.0a20250104": utc(2025, 1, 4, 9)}).items():
        folder = tmp_path / project
        folder.mkdir()
        doc = {
            "meta": {"api-version": "1.1"},
            "files": [
                {
                    "filename": f.file,
                    "url": f"../files/{f.file}",
                    "hashes": {"sha256": SHA},
                    "upload-time": "2025-01-04T09:00:00Z",
                }
                for f in files
            ],
        }
        (folder / "index.json").write_text(json.dumps(doc))
    got = resolve_wheels(
        "linux", FAMILY, policy="latest", now=utc(2025, 1, 8), index_url=tmp_path.as_uri(), fetch=fetch_page
    )
    assert got.version == "7.0.0a20250104" and got.published == utc(2025, 1, 4, 9)
    assert got.wheels[1].url == (tmp_path / "files" / got.wheels[1].file).as_uri()


def test_the_families_listing_is_the_folder_above_the_family() -> None:
    from pipeline.rocm.wheel_index import families_url

    assert families_url("https://wheels.example/v2/{family}/") == "https://wheels.example/v2/"
    # One index for every family: no folder lists them.
    assert families_url("https://wheels.example/simple/") is None
    assert families_url("https://wheels.example/v2-{family}/") is None


def test_the_families_a_listing_names() -> None:
    from pipeline.rocm.wheel_index import parse_families

    html = (
        '<html><body><a href="../">../</a><a href="gfx110X-all/">gfx110X-all/</a>'
        '<a href="https://wheels.example/v2/gfx1151/">gfx1151</a><a href="index.html">index.html</a>'
        '<a href="gfx94X-dcgpu/">gfx94X-dcgpu/</a></body></html>'
    )
    assert parse_families(html, "text/html", where="https://wheels.example/v2/") == [
        "gfx110X-all",
        "gfx1151",
        "gfx94X-dcgpu",
    ]
    doc = json.dumps(
        {"meta": {"api-version": "1.1"}, "projects": [{"name": "gfx120X-all"}, {"name": "rocm"}, 7]}
    )
    assert parse_families(doc, "application/vnd.pypi.simple.v1+json", where="x") == ["gfx120X-all"]
    with pytest.raises(IndexFormatError, match=r"^x: not a JSON listing$"):
        parse_families("[" * 100_000, "application/json", where="x")


def test_a_missing_family_page_is_an_unknown_family_only_when_the_listing_lacks_it() -> None:
    from pipeline.errors import NetworkError

    listing = "https://wheels.example/v2/"
    page = '<a href="gfx110X-all/">gfx110X-all/</a><a href="gfx1151/">gfx1151/</a>'

    def fetch(url: str) -> tuple[str, str]:
        if url == listing:
            return page, "text/html"
        raise NetworkError.missing(f"{url}: HTTP 404 Not Found")

    with pytest.raises(ResolutionError) as info:
        resolve_wheels(
            "linux",
            "gfx1150",
            policy="latest",
            now=utc(2025, 1, 8),
            fetch=fetch,
            index_url="https://wheels.example/v2/gfx1150/",
            listing_url=listing,
        )
    assert info.value.exit_code == 6
    assert str(info.value) == (
        f"unknown ROCm family 'gfx1150' for linux in the wheel index {listing} "
        "(did you mean 'gfx1151'?); the index has: gfx110X-all, gfx1151"
    )
    # The family is listed, so its missing page is the index's fault: the network error stands.
    with pytest.raises(NetworkError, match="HTTP 404"):
        resolve_wheels(
            "linux",
            "gfx1151",
            policy="latest",
            now=utc(2025, 1, 8),
            fetch=fetch,
            index_url="https://wheels.example/v2/gfx1151/",
            listing_url=listing,
        )


def test_the_projects_of_a_build_on_each_layout() -> None:
    from pipeline.rocm.wheel_index import is_per_family, projects_for, selector_extras

    # One index per family: the family's libraries project (PEP 503 names).
    assert projects_for("gfx110X-all") == (
        "rocm",
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-libraries-gfx110x-all",
    )
    # One index for every GPU: the shared libraries and a device project per target (TheRock's _dist_info.py).
    kpack = projects_for("gfx110X-all", ("gfx1100", "gfx1101"))
    assert kpack == (
        "rocm",
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-libraries",
        "rocm-sdk-device-gfx1100",
        "rocm-sdk-device-gfx1101",
    )
    assert selector_extras(kpack) == "libraries,devel,device-gfx1100,device-gfx1101"
    assert is_per_family("https://rocm.nightlies.amd.com/v2/{family}/")
    assert not is_per_family("https://{stream}.repo.amd.com/rocm/whl-next/")
