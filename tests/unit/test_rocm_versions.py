"""Tarball names and version ordering."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.names import is_family
from pipeline.names import rocm_version_date as version_date
from pipeline.rocm.versions import (
    build_date,
    parse_tarball,
    parse_tarball_name,
    tarball_name,
    version_line,
    version_sort_key,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz",
            ("linux", "gfx110X-all", "10.1.0a20260807"),
        ),
        ("therock-dist-windows-gfx1151-7.15.0rc20260101.tar.gz", ("windows", "gfx1151", "7.15.0rc20260101")),
        (
            "therock-dist-linux-gfx94X-dcgpu-6.4.0a20250520.tar.gz",
            ("linux", "gfx94X-dcgpu", "6.4.0a20250520"),
        ),
        (
            "therock-dist-linux-gfx120X-all-10.0.12a20240229.tar.gz",
            ("linux", "gfx120X-all", "10.0.12a20240229"),
        ),
    ],
)
def test_parses_tarball_names(name: str, expected: tuple[str, str, str]) -> None:
    assert parse_tarball_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz.sha256",  # checksum
        "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.xz",  # other suffix
        "therock-dist-macos-gfx110X-all-10.1.0a20260807.tar.gz",  # other os
        "therock-dist-linux-gfx110X-all-10.1.0a.tar.gz",  # no date
        "therock-dist-linux-gfx110X-all-10.1.0a2026080.tar.gz",  # 7 digits
        "therock-dist-linux-gfx110X-all-10.1.0a202608071.tar.gz",  # 9 digits
        "therock-dist-linux-gfx110X-all-10.1.0a20261340.tar.gz",  # no such day
        "therock-dist-linux-gfx110X-all-10.1.0b20260807.tar.gz",  # unknown stage
        "therock-dist-linux-gfx110X-all-10.1a20260807.tar.gz",  # X.Y only
        "therock-dist-linux-gfx110X-all-10.1.0a20260807.dev0.tar.gz",
        "therock-sdk-linux-gfx110X-all-10.1.0a20260807.tar.gz",
        "index.html",
        "",
    ],
)
def test_ignores_other_files(name: str) -> None:
    assert parse_tarball_name(name) is None


def test_newer_date_wins_over_higher_version() -> None:
    assert version_sort_key("7.15.0a20260808") > version_sort_key("10.1.0a20260807")


def test_same_date_orders_numerically_not_as_text() -> None:
    assert "10.1.0a20260807" < "7.15.0a20260807"  # text order is wrong...
    assert version_sort_key("10.1.0a20260807") > version_sort_key("7.15.0a20260807")  # ...numeric is right
    assert version_sort_key("7.15.0a20260807") > version_sort_key("7.9.0a20260807")
    assert version_sort_key("7.9.10a20260807") > version_sort_key("7.9.9a20260807")


def test_release_candidate_follows_alpha_of_same_day() -> None:
    assert version_sort_key("7.0.0rc20260807") > version_sort_key("7.0.0a20260807")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("therock-dist-linux-gfx110X-all-7.14.0.tar.gz", ("linux", "gfx110X-all", "7.14.0", None)),
        ("therock-dist-windows-gfx103X-all-10.0.0.tar.gz", ("windows", "gfx103X-all", "10.0.0", None)),
        (
            "therock-dist-linux-gfx1151-7.14.0a20261205.tar.gz",
            ("linux", "gfx1151", "7.14.0a20261205", date(2026, 12, 5)),
        ),
    ],
)
def test_a_stable_release_is_a_tarball_without_a_build_date(name: str, expected: tuple[object, ...]) -> None:
    assert parse_tarball(name) == expected
    assert parse_tarball_name(name) == expected[:3]


def test_stable_releases_order_numerically_and_their_date_is_the_publish_date() -> None:
    assert sorted(["10.0.0", "7.14.0", "7.9.1", "7.12.0"], key=version_sort_key) == [
        "7.9.1",
        "7.12.0",
        "7.14.0",
        "10.0.0",
    ]
    assert version_line("7.14.0") == (7, 14)
    published = datetime(2026, 10, 22, 23, 30, tzinfo=timezone(timedelta(hours=-7)))
    assert build_date("7.14.0", published) == date(2026, 10, 23)  # UTC
    assert build_date("7.14.0", None) == date.min
    assert build_date("7.14.0a20261021", published) == date(2026, 10, 21)  # a nightly's own date wins
    with pytest.raises(ValueError):
        version_date("7.14.0")  # no date in a release's version


def test_version_parts() -> None:
    assert version_date("10.1.0a20260807") == date(2026, 8, 7)
    assert version_line("10.1.0a20260807") == (10, 1)


@pytest.mark.parametrize("bad", ["10.1", "10.1.0a", "latest", "10.1.0a2026-08-07", "10.1.0a20260230", " "])
def test_non_versions_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        version_sort_key(bad)


def test_family_names() -> None:
    assert is_family("gfx110X-all") and is_family("gfx1151") and is_family("gfx94X-dcgpu")
    assert not is_family("110X") and not is_family("gfx110X-") and not is_family("gfx110X all")


_ALNUM = "0123456789abcdefXYZ"
_families = st.builds(
    lambda core, suffix: f"gfx{core}{suffix}",
    st.text(_ALNUM, min_size=1, max_size=6),
    st.sampled_from(["", "-all", "-dcgpu", "-dgpu"]),
)
_dates = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_triples = st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))


@given(st.sampled_from(["linux", "windows"]), _families, _triples, st.sampled_from(["a", "rc"]), _dates)
def test_names_round_trip(
    os_name: str, family: str, xyz: tuple[int, int, int], stage: str, day: date
) -> None:
    version = f"{xyz[0]}.{xyz[1]}.{xyz[2]}{stage}{day:%Y%m%d}"
    assert parse_tarball_name(tarball_name(os_name, family, version)) == (os_name, family, version)
    assert version_date(version) == day


@given(_triples, _dates, _triples, _dates)
def test_order_is_date_then_numeric_version(
    xyz1: tuple[int, int, int], d1: date, xyz2: tuple[int, int, int], d2: date
) -> None:
    v1 = "{}.{}.{}a{:%Y%m%d}".format(*xyz1, d1)
    v2 = "{}.{}.{}a{:%Y%m%d}".format(*xyz2, d2)
    assert (version_sort_key(v1) < version_sort_key(v2)) == ((d1, xyz1) < (d2, xyz2))


@given(
    st.text("0123456789.arc", max_size=20)
    | st.builds(
        lambda xyz, stage, digits: f"{xyz[0]}.{xyz[1]}.{xyz[2]}{stage}{digits}",
        _triples,
        st.sampled_from(["a", "rc", "b"]),
        st.text("0123456789", min_size=7, max_size=9),
    )
)
def test_every_reader_of_a_version_applies_one_rule(text: str) -> None:
    """matrix.toml's check, the flag's parser, the ordering, the simulator: the same verdict on any text."""
    from pipeline.errors import UsageError
    from pipeline.inputs.matrix_checks import policy_check
    from pipeline.names import is_rocm_version, parse_policy
    from pipeline.rocm.simulate import check_policy

    # What a version is, written here from the outside: the shape, and a date the calendar has.
    head, _, digits = text.partition("a") if "a" in text else text.partition("rc")
    real_day = len(digits) == 8 and digits.isdigit()
    try:
        date(int(digits[:4]), int(digits[4:6]), int(digits[6:])) if real_day else None
    except ValueError:
        real_day = False
    xyz = head.split(".")
    three_numbers = len(xyz) == 3 and all(p.isdigit() and p.isascii() for p in xyz)
    # A stable release is X.Y.Z alone (TheRock's release type "release").
    release = not digits and "a" not in text and "rc" not in text and three_numbers
    expected = (real_day and three_numbers) or release
    assert is_rocm_version(text) is expected
    assert (policy_check(text) is None) is expected
    try:
        accepted = parse_policy(text, where="--rocm-version") == text
    except UsageError:
        accepted = False
    assert accepted is expected
    try:
        check_policy(text)
        simulated = True
    except UsageError:
        simulated = False
    # The simulator replays the nightly stream: a release is refused there.
    assert simulated is (expected and not release)


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("10.1.0a20261399", False),  # month 13
        ("10.1.0a20260230", False),  # 30 February
        ("10.1.0a20250229", False),  # 29 February of a common year
        ("10.1.0a20240229", True),  # ...and of a leap year
        ("10.1.0rc20261231", True),
    ],
)
def test_a_version_date_must_be_a_calendar_day(text: str, valid: bool) -> None:
    from pipeline.inputs.matrix_checks import policy_check

    assert (policy_check(text) is None) is valid
    if not valid:
        with pytest.raises(ValueError, match="not a TheRock version"):
            version_date(text)
