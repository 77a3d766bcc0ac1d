"""Pure parts of source resolution: ls-remote parsing, tag order, age, the spec's JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import SourceError
from pipeline.inputs.matrix import MixPin
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.source.checkout import CheckoutInfo, folder_tag
from pipeline.source.git_commands import git_url
from pipeline.source.tags import build_tags_newest_first, old_enough, parse_ls_remote_tags

LS_REMOTE = (
    "1111111111111111111111111111111111111111\trefs/tags/b99\n"
    "2222222222222222222222222222222222222222\trefs/tags/b100\n"
    "3333333333333333333333333333333333333333\trefs/tags/b101\n"
    "4444444444444444444444444444444444444444\trefs/tags/b101^{}\n"
    "5555555555555555555555555555555555555555\trefs/tags/v1.0\n"
    "garbage line\n"
)
PIN = MixPin(repo="ggml-org/llama.cpp", number=5, sha="a" * 40)


def test_ls_remote_peels_annotated_tags() -> None:
    tags = parse_ls_remote_tags(LS_REMOTE)
    assert tags == {"b99": "1" * 40, "b100": "2" * 40, "b101": "4" * 40, "v1.0": "5" * 40}


def test_build_tags_sort_numerically_and_skip_others() -> None:
    assert build_tags_newest_first(["b99", "b100", "v1.0", "b1000", "b10x", "b7"]) == [
        "b1000",
        "b100",
        "b99",
        "b7",
    ]


@given(st.sets(st.integers(min_value=0, max_value=10**7), min_size=1))
def test_newest_first_is_numeric_descending(numbers: set[int]) -> None:
    ordered = build_tags_newest_first(f"b{n}" for n in numbers)
    assert [int(t[1:]) for t in ordered] == sorted(numbers, reverse=True)


def test_old_enough_boundary() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert old_enough(now - timedelta(hours=6), now, 6)
    assert not old_enough(now - timedelta(hours=6) + timedelta(seconds=1), now, 6)
    # A tag from after `now` never existed for that run.
    assert not old_enough(now + timedelta(hours=1), now, 0)


def test_git_url_template() -> None:
    assert git_url("alice/llama.cpp", "https://github.com/{repo}") == "https://github.com/alice/llama.cpp"
    assert git_url("o/r", "file:///tmp/x/{repo}.git") == "file:///tmp/x/o/r.git"
    with pytest.raises(SourceError, match="no '\\{repo\\}' placeholder"):
        git_url("o/r", "https://example.invalid/")


def test_spec_json_round_trip() -> None:
    spec = SourceSpec(
        repo="https://x.invalid/r", base_tag="b5", base_commit="b" * 40, mix=(PIN,), commit="c" * 40
    )
    data = spec.to_json()
    assert data["tag"] == spec.tag and spec.tag.startswith("b5-mix-")
    assert SourceSpec.from_json(data) == spec


def test_spec_without_mix_is_tagged_by_its_base() -> None:
    assert SourceSpec(repo="r", base_tag="b5").tag == "b5"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tag": "b5-mix-0000000"}, "does not match its base tag and mix set"),
        ({"commit": "xyz"}, "source.commit: 'xyz' is not a full commit SHA"),
        ({"base_tag": ""}, "must be non-empty strings"),
        ({"mix": [{"repo": "o/r", "number": 1, "sha": "short"}]}, r"source.mix\[0\]: malformed mix pin"),
        ({"mix": "nope"}, "expected a list of pins"),
    ],
)
def test_spec_from_bad_json(change: dict[str, object], message: str) -> None:
    data = SourceSpec(repo="r", base_tag="b5", mix=(PIN,)).to_json() | change
    with pytest.raises(SourceError, match=message):
        SourceSpec.from_json(data)


@pytest.mark.parametrize(
    ("info", "explicit", "expected"),
    [
        (CheckoutInfo(commit="a" * 40, tag="b100", dirty=False), None, "b100"),
        (CheckoutInfo(commit="a" * 40, tag="b100-3-gaaaaaaa", dirty=True), None, "b100-3-gaaaaaaa-dirty"),
        (CheckoutInfo(commit="a" * 40, tag=None, dirty=False), None, "gaaaaaaa"),
        (CheckoutInfo(commit=None, tag=None, dirty=False), None, "local"),
        (CheckoutInfo(commit="a" * 40, tag="b100", dirty=True), "b200", "b200"),
    ],
)
def test_folder_tag(info: CheckoutInfo, explicit: str | None, expected: str) -> None:
    assert folder_tag(info, explicit) == expected
