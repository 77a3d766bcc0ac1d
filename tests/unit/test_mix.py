"""The mix set's hash, tag, identity and JSON form (pure)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import SourceError
from pipeline.inputs.matrix import MixPin
from pipeline.inputs.mix import (
    check_pins,
    merge_identity_env,
    merge_message,
    mix_hash,
    mix_lines,
    mix_tag,
    pin_from_json,
    pin_to_json,
)

A = MixPin(repo="ggml-org/llama.cpp", number=12345, sha="0123456789abcdef0123456789abcdef01234567")
B = MixPin(repo="alice/llama.cpp", number=7, sha="89abcdef0123456789abcdef0123456789abcdef")


def test_lines_are_repo_number_sha_joined_by_newline_without_trailing_newline() -> None:
    assert mix_lines((A, B)) == (
        "ggml-org/llama.cpp#12345:0123456789abcdef0123456789abcdef01234567\n"
        "alice/llama.cpp#7:89abcdef0123456789abcdef0123456789abcdef"
    )


def test_hash_is_sha256_of_the_lines() -> None:
    text = (
        b"ggml-org/llama.cpp#12345:0123456789abcdef0123456789abcdef01234567\n"
        b"alice/llama.cpp#7:89abcdef0123456789abcdef0123456789abcdef"
    )
    assert mix_hash((A, B)) == hashlib.sha256(text).hexdigest()
    assert mix_tag("b10327", (A, B)) == "b10327-mix-" + hashlib.sha256(text).hexdigest()[:7]


def test_single_pin_hash_is_a_known_value() -> None:
    # Fixed here so that a change of the hashed text cannot pass unnoticed.
    assert mix_hash((A,)) == "cec6aa7a1230fa6f1a5c20679667fde8b4b71adc8aab6ce3d21280ce6281b160"
    assert mix_tag("b1", (A,)) == "b1-mix-cec6aa7"


def test_order_matters() -> None:
    assert mix_tag("b1", (A, B)) != mix_tag("b1", (B, A))


def test_no_mix_keeps_the_base_tag() -> None:
    assert mix_tag("b10327", ()) == "b10327"


@given(st.lists(st.integers(min_value=1, max_value=10**6), min_size=1, max_size=5, unique=True))
def test_tag_shape(numbers: list[int]) -> None:
    pins = tuple(MixPin(repo="o/r", number=n, sha=f"{n:040x}") for n in numbers)
    tag = mix_tag("b42", pins)
    prefix, digest = tag.rsplit("-", 1)
    assert prefix == "b42-mix" and len(digest) == 7 and int(digest, 16) >= 0


def test_identity_dates_follow_the_base_commit() -> None:
    env0, env2 = merge_identity_env(1_700_000_000, 0), merge_identity_env(1_700_000_000, 2)
    assert env0["GIT_AUTHOR_DATE"] == env0["GIT_COMMITTER_DATE"] == "1700000001 +0000"
    assert env2["GIT_COMMITTER_DATE"] == "1700000003 +0000"
    assert env0["GIT_AUTHOR_NAME"] == env0["GIT_COMMITTER_NAME"]


def test_merge_message_holds_inputs_only() -> None:
    assert merge_message(A, "b10327") == (
        "Merge ggml-org/llama.cpp#12345 at 0123456789abcdef0123456789abcdef01234567 into b10327 (llama-pipeline mix)"
    )


@pytest.mark.parametrize(
    ("pin", "message"),
    [
        (MixPin(repo="no-slash", number=1, sha="0" * 40), "malformed mix pin repo 'no-slash'"),
        (MixPin(repo="o/r", number=0, sha="0" * 40), "malformed mix pin number 0"),
        (MixPin(repo="o/r", number=1, sha="0" * 39), "is not 40 lowercase hex digits"),
        (MixPin(repo="o/r", number=1, sha="A" * 40), "is not 40 lowercase hex digits"),
    ],
)
def test_malformed_pins(pin: MixPin, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        check_pins((pin,), "source.mix")


def test_duplicate_pin() -> None:
    with pytest.raises(SourceError, match="listed twice"):
        check_pins((A, A), "source.mix")


def test_json_round_trip_and_errors() -> None:
    assert pin_from_json(pin_to_json(A), "x") == A
    with pytest.raises(SourceError, match=r"x: malformed mix pin"):
        pin_from_json({"repo": "o/r", "number": 1}, "x")
    with pytest.raises(SourceError, match=r"x: malformed mix pin"):
        pin_from_json({"repo": "o/r", "number": "1", "sha": "0" * 40}, "x")
