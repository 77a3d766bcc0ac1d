"""Cache keys: restore prefixes never cross legs or toolchains; the inverse parses every key."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pipeline.actions_cache.cache_keys import (
    CCACHE_KIND,
    TOOLCHAIN,
    TOOLCHAIN_KIND,
    KeyParts,
    MalformedKeyError,
    cache_key,
    key_toolchain,
    looks_minted,
    parse_key,
    restore_keys,
    restore_prefix,
    toolchain_cache_key,
)
from pipeline.errors import UsageError
from pipeline.inputs.matrix import LEG_NAME, LEG_NAME_MAX

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _dashed(inner: str, *, trailing_dash: bool) -> st.SearchStrategy[str]:
    """Words of ``inner`` characters joined by single '-', starting with a letter or digit."""
    words = st.lists(st.text(alphabet=inner, min_size=1, max_size=6), min_size=1, max_size=4)
    return st.builds(
        lambda first, ws, dash: first + "-".join(ws) + ("-" if dash else ""),
        st.sampled_from(_ALNUM),
        words,
        st.booleans() if trailing_dash else st.just(False),
    )


# Leg names as pipeline.inputs.matrix allows them (a trailing '-' included); toolchains as key_toolchain makes them.
legs = _dashed(_ALNUM + "._", trailing_dash=True).filter(
    lambda s: bool(LEG_NAME.match(s)) and len(s) <= LEG_NAME_MAX
)
toolchains = _dashed(_ALNUM + "._+", trailing_dash=False).filter(lambda s: bool(TOOLCHAIN.match(s)))
tags = st.builds(
    lambda n, mix: f"b{n}" + (f"-mix-{mix}" if mix else ""),
    st.integers(min_value=0, max_value=10**7),
    st.one_of(st.none(), st.text(alphabet="0123456789abcdef", min_size=7, max_size=40)),
)


def test_key_shape_and_restore_prefix() -> None:
    key = cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20260807", "b10327-mix-1a2b3c4")
    assert key == "llama-ccache--rocm-linux-gfx110X--rocm-10.1.0a20260807--b10327-mix-1a2b3c4"
    assert restore_keys("rocm-linux-gfx110X", "rocm-10.1.0a20260807") == [
        "llama-ccache--rocm-linux-gfx110X--rocm-10.1.0a20260807--"
    ]


@pytest.mark.parametrize("tag", ["b10327", "b10327-mix-1a2b3c4"])
def test_both_tag_forms_parse(tag: str) -> None:
    parts = parse_key(cache_key("cpu", "gcc-12.2.0", tag))
    assert parts == KeyParts(kind=CCACHE_KIND, leg="cpu", toolchain="gcc-12.2.0", tag=tag)


def test_a_leg_that_prefixes_another_leg_never_restores_its_caches() -> None:
    prefix = restore_prefix("cpu", "gcc-12.2.0")
    assert not cache_key("cpu-avx", "gcc-12.2.0", "b1").startswith(prefix)
    assert not cache_key("cpu-", "gcc-12.2.0", "b1").startswith(prefix)
    assert cache_key("cpu", "gcc-12.2.0", "b1").startswith(prefix)


def test_a_toolchain_that_prefixes_another_never_restores_its_caches() -> None:
    prefix = restore_prefix("cpu", "gcc-12")
    assert not cache_key("cpu", "gcc-12.2", "b1").startswith(prefix)
    assert not cache_key("cpu", "gcc-12-1", "b1").startswith(prefix)


def test_a_leg_ending_in_dash_parses_back() -> None:
    key = cache_key("cpu-", "gcc", "b7")
    assert key == "llama-ccache--cpu---gcc--b7"
    assert parse_key(key) == KeyParts(kind=CCACHE_KIND, leg="cpu-", toolchain="gcc", tag="b7")


@given(legs, toolchains, tags)
def test_inverse_parses_every_key(leg: str, toolchain: str, tag: str) -> None:
    assert parse_key(cache_key(leg, toolchain, tag)) == KeyParts(
        kind=CCACHE_KIND, leg=leg, toolchain=toolchain, tag=tag
    )


@given(legs, toolchains)
def test_inverse_parses_every_toolchain_key(leg: str, toolchain: str) -> None:
    assert parse_key(toolchain_cache_key(leg, toolchain)) == KeyParts(
        kind=TOOLCHAIN_KIND, leg=leg, toolchain=toolchain, tag=None
    )


@given(legs, toolchains, legs, toolchains, tags)
def test_restore_prefix_never_matches_another_leg_or_toolchain(
    leg: str, toolchain: str, other_leg: str, other_toolchain: str, tag: str
) -> None:
    assume((leg, toolchain) != (other_leg, other_toolchain))
    assert not cache_key(other_leg, other_toolchain, tag).startswith(restore_prefix(leg, toolchain))


@given(legs, toolchains, st.text(alphabet="abcdefXYZ0123456789._-", min_size=1, max_size=8), toolchains, tags)
def test_restore_prefix_never_matches_a_longer_leg(
    leg: str, toolchain: str, suffix: str, other_toolchain: str, tag: str
) -> None:
    # The dangerous case: one leg's name is a prefix of the other's.
    longer = leg + suffix
    assume(LEG_NAME.match(longer) and len(longer) <= LEG_NAME_MAX)
    assert not cache_key(longer, other_toolchain, tag).startswith(restore_prefix(leg, toolchain))
    assert not cache_key(leg, other_toolchain, tag).startswith(restore_prefix(longer, toolchain))


@given(legs, toolchains, tags, tags)
def test_restore_prefix_matches_every_run_of_its_leg_and_toolchain(
    leg: str, toolchain: str, tag: str, other_tag: str
) -> None:
    assert cache_key(leg, toolchain, other_tag).startswith(restore_prefix(leg, toolchain))
    assert cache_key(leg, toolchain, tag) != cache_key(leg, toolchain, other_tag) or tag == other_tag


@given(st.text(max_size=60))
def test_key_toolchain_always_gives_a_usable_identity(text: str) -> None:
    ident = key_toolchain(text)
    assert TOOLCHAIN.match(ident)
    assert key_toolchain(ident) == ident
    assert parse_key(cache_key("cpu", ident, "b1")) is not None


def test_key_toolchain_normalises_separators() -> None:
    assert key_toolchain("gcc--12") == "gcc-12"
    assert key_toolchain("-clang 17.0.6 (Debian)-") == "clang_17.0.6_Debian"
    assert key_toolchain("rocm-10.1.0a20260807") == "rocm-10.1.0a20260807"


@pytest.mark.parametrize(
    ("leg", "toolchain", "tag"),
    [
        ("cpu--x", "gcc", "b1"),
        ("-cpu", "gcc", "b1"),
        ("cpu", "gcc--12", "b1"),
        ("cpu", "-gcc", "b1"),
        ("cpu", "gcc-", "b1"),
        ("cpu", "gcc", "latest"),
        ("cpu", "gcc", "b1-mix-XYZ1234"),
        ("cpu", "gcc", "10327"),
    ],
)
def test_bad_parts_are_refused(leg: str, toolchain: str, tag: str) -> None:
    with pytest.raises(UsageError):
        cache_key(leg, toolchain, tag)


@pytest.mark.parametrize(
    "key",
    ["setup-python-Linux-x64-abc", "node-cache-Linux-npm-123", "llama-cpp-other", "ccache-cpu-gcc-b1", ""],
)
def test_foreign_keys_are_not_ours(key: str) -> None:
    assert parse_key(key) is None
    assert not looks_minted(key)


@pytest.mark.parametrize(
    "key",
    [
        "llama-ccache-cpu-gcc-b1",  # the old single-dash scheme
        "llama-ccache--cpu--gcc",  # no tag
        "llama-ccache--cpu--gcc--latest",
        "llama-ccache----gcc--b1",  # empty leg
        "llama-ccache--cpu----b1",  # empty toolchain
        "llama-ccache--cpu---gcc-b1",
        "llama-toolchain--cpu",
        "llama-ccachefoo--cpu--gcc--b1",
    ],
)
def test_lookalike_keys_that_do_not_parse_are_malformed(key: str) -> None:
    assert looks_minted(key)
    with pytest.raises(MalformedKeyError):
        parse_key(key)
