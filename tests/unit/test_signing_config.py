"""matrix.toml's [signing]: which legs the release signs, its publisher, and each mistake in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.commands.matrix import github_matrix
from pipeline.errors import ConfigError
from pipeline.inputs.matrix import load_matrix, parse_matrix

ROOT = Path(__file__).resolve().parents[2]
LEGS = {
    "cpu": {"backend": "cpu"},
    "cpu-windows": {"backend": "cpu", "os": "windows"},
    "vulkan-windows": {"backend": "vulkan", "os": "windows"},
}


def _err(signing: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_matrix({"legs": LEGS, "signing": signing}, Path("m.toml"))
    message = str(info.value)
    assert "\n" not in message and message.startswith("m.toml: signing")
    return message


def test_the_shipped_matrix_signs_every_windows_leg_and_nothing_else() -> None:
    matrix = load_matrix(ROOT / "matrix.toml")
    signed = {leg.name for leg in matrix.all_legs.values() if matrix.signing.covers(leg)}
    assert signed == {leg.name for leg in matrix.all_legs.values() if leg.os == "windows"}
    assert len(signed) == 18
    assert matrix.signing.publisher and matrix.signing.repository == "unslothai/llama.cpp"


def test_patterns_pick_legs_by_name() -> None:
    matrix = parse_matrix(
        {"legs": LEGS, "signing": {"legs": ["cpu-windows"], "publisher": "P"}}, Path("m.toml")
    )
    assert [n for n, leg in matrix.legs.items() if matrix.signing.covers(leg)] == ["cpu-windows"]
    # A matrix of fewer legs (a fork's, CI's reduction) keeps the shipped patterns: they sign nothing there.
    fewer = parse_matrix(
        {"legs": {"cpu": {"backend": "cpu"}}, "signing": {"legs": ["*-windows*"], "publisher": "P"}},
        Path("m.toml"),
    )
    assert not any(fewer.signing.covers(leg) for leg in fewer.legs.values())
    assert not parse_matrix({"legs": LEGS}, Path("m.toml")).signing.legs


def test_each_mistake_is_one_line_naming_the_key() -> None:
    assert "matches cpu, a linux leg: Authenticode signs Windows" in _err(
        {"legs": ["cpu*"], "publisher": "P"}
    )
    assert "signing.publisher: required key is missing" in _err({"legs": ["*-windows"]})
    assert "signing.repository: expected 'owner/name'" in _err({"legs": [], "repository": "no-slash"})
    assert "signing.publiser: unknown key" in _err({"publiser": "P"})


def test_the_github_matrix_puts_signed_legs_in_the_signing_environment() -> None:
    matrix = parse_matrix(
        {"legs": LEGS, "signing": {"legs": ["*-windows"], "publisher": "P"}}, Path("m.toml")
    )
    entries = {e["leg"]: e["environment"] for e in github_matrix(matrix, list(matrix.legs))["include"]}
    assert entries == {"cpu": "", "cpu-windows": "release-signing", "vulkan-windows": "release-signing"}
