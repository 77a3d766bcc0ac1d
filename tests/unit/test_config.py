"""matrix.toml validation: every mistake gets one message naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.inputs.matrix import load_matrix, parse_matrix
from pipeline.inputs.run_inputs import read_inputs

ROOT = Path(__file__).resolve().parents[2]
BASE = {"legs": {"cpu": {"backend": "cpu"}}}


def _err(data: dict, path: Path = Path("m.toml")) -> str:
    with pytest.raises(ConfigError) as info:
        parse_matrix(data, path)
    assert info.value.exit_code == 2
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("m.toml: ")
    return message


def test_project_matrix_declares_the_first_five_legs_first() -> None:
    m = load_matrix(ROOT / "matrix.toml")
    assert list(m.legs)[:5] == ["rocm-linux-gfx110X", "rocm-windows-gfx1151", "cuda", "vulkan", "cpu"]
    gfx110x = m.leg("rocm-linux-gfx110X")
    assert gfx110x.family == "gfx110X-all"
    assert gfx110x.targets == ("gfx1100", "gfx1101", "gfx1102", "gfx1103")
    assert m.leg("rocm-windows-gfx1151").os == "windows"
    assert m.ccache.compiler_check == "content"
    assert m.source.repo == "https://github.com/ggml-org/llama.cpp"
    assert [leg.needs_resolution for leg in m.legs.values()][:5] == [True, True, False, False, False]


def test_defaults() -> None:
    m = parse_matrix(BASE, Path("m.toml"))
    # The week-stable rule is the default; 'weekly' must be asked for.
    assert m.rocm.policy == "weekly-stable"
    assert m.source.tag == "latest"
    assert m.leg("cpu").os == "linux"


def test_unknown_key_suggests_the_near_miss() -> None:
    msg = _err({**BASE, "ccache": {"max_sise": "1G"}})
    assert "ccache.max_sise: unknown key" in msg
    assert "did you mean 'max_size'" in msg


def test_unknown_top_level_table() -> None:
    assert "did you mean 'legs'" in _err({**BASE, "lgs": {}})


def test_wrong_type() -> None:
    msg = _err({"legs": {"cpu": {"backend": "cpu", "cmake_args": "-DX=1"}}})
    assert "legs.cpu.cmake_args: expected an array of strings" in msg


def test_missing_required() -> None:
    assert "legs.cpu.backend: required key is missing" in _err({"legs": {"cpu": {}}})
    assert "legs: required table is missing" in _err({})


def test_a_misspelt_required_key_is_named_with_the_key_it_should_be() -> None:
    msg = _err({"legs": {"cpu": {"backnd": "cpu", "os": "linux"}}})
    assert msg.endswith(
        "legs.cpu.backnd: unknown key (did you mean 'backend'?); legs.cpu.backend is required"
    )
    # A stray key that resembles nothing required is still left to the unknown-key check, after the missing key.
    assert _err({"legs": {"cpu": {"zzz": 1}}}) == "m.toml: legs.cpu.backend: required key is missing"


def test_unknown_backend_suggests() -> None:
    msg = _err({"legs": {"cpu": {"backend": "vulcan"}}})
    assert "legs.cpu.backend" in msg and "did you mean 'vulkan'" in msg


@pytest.mark.parametrize("name", ["bad name", "-lead", "a--b", "a/b", "x" * 65, "ü"])
def test_unsafe_leg_names(name: str) -> None:
    assert "unsafe leg name" in _err({"legs": {name: {"backend": "cpu"}}})


def test_rocm_leg_needs_family_and_targets() -> None:
    assert "legs.r.family: required" in _err({"legs": {"r": {"backend": "rocm", "targets": ["gfx1100"]}}})
    assert "legs.r.targets: required" in _err({"legs": {"r": {"backend": "rocm", "family": "gfx1151"}}})


def test_bad_values() -> None:
    assert "rocm.policy" in _err({**BASE, "rocm": {"policy": "monthly"}})
    assert "source.tag" in _err({**BASE, "source": {"tag": "v1.0"}})
    pin = {"repo": "ggml-org/llama.cpp", "number": 1, "sha": "abc"}
    assert "source.mix[0].sha" in _err({**BASE, "source": {"mix": [pin]}})


def test_duplicate_leg_is_a_toml_error(tmp_path: Path) -> None:
    f = tmp_path / "matrix.toml"
    f.write_text('[legs.cpu]\nbackend = "cpu"\n[legs.cpu]\nbackend = "cpu"\n')
    with pytest.raises(ConfigError) as info:
        load_matrix(f)
    assert str(f) in str(info.value) and "TOML syntax error" in str(info.value)


def test_unknown_leg_lookup_suggests() -> None:
    m = load_matrix(ROOT / "matrix.toml")
    with pytest.raises(ConfigError, match="did you mean 'cuda'"):
        m.leg("cudaa")


def test_matrix_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "other.toml"
    f.write_text('[legs.only]\nbackend = "cpu"\n')
    monkeypatch.setenv("PIPELINE_MATRIX", str(f))
    # The run's inputs pick the matrix file (flag > environment > ./matrix.toml).
    assert list(read_inputs(None).require_matrix().legs) == ["only"]


def test_project_matrix_uses_the_week_stable_policy() -> None:
    assert load_matrix(ROOT / "matrix.toml").rocm.policy == "weekly-stable"


@pytest.mark.parametrize(
    "policy", ["weekly-stable", "weekly", "latest", "stable", "10.1.0a20260807", "7.14.0"]
)
def test_every_policy_name_is_accepted(policy: str) -> None:
    assert parse_matrix({**BASE, "rocm": {"policy": policy}}, Path("m.toml")).rocm.policy == policy


@pytest.mark.parametrize("policy", ["weekly_stable", "Weekly-Stable", "weekly-sunday", "Stable", "7.14"])
def test_near_policy_names_are_rejected_naming_the_key_and_the_choices(policy: str) -> None:
    message = _err({**BASE, "rocm": {"policy": policy}})
    assert "rocm.policy" in message and "'weekly-stable', 'weekly', 'latest', 'stable'" in message
    assert message.endswith(f"got {policy!r}")


def test_config_and_policy_module_know_the_same_rules() -> None:
    # config stays stdlib-only (noxfile imports it before any venv), so it keeps its own tuple.
    from pipeline.names import POLICIES as CONFIG_POLICIES
    from pipeline.rocm.policy import POLICIES

    assert CONFIG_POLICIES == POLICIES == ("weekly-stable", "weekly", "latest", "stable")


def test_a_disabled_leg_is_declared_listed_and_never_built() -> None:
    data = {
        "legs": {
            "cpu": {"backend": "cpu"},
            "cuda-old": {"backend": "cuda", "disabled": "no compiler in the wheels"},
            "vulkan": {"backend": "vulkan"},
        }
    }
    m = parse_matrix(data, Path("m.toml"))
    assert list(m.legs) == ["cpu", "vulkan"]  # what a run builds: sessions, the GitHub matrix, publish
    assert list(m.disabled_legs) == ["cuda-old"]
    assert [leg.name for leg in m.declared_legs] == ["cpu", "cuda-old", "vulkan"]  # the file's order
    with pytest.raises(ConfigError) as info:
        m.leg("cuda-old")
    assert str(info.value) == "leg 'cuda-old' is disabled in m.toml: no compiler in the wheels"


def test_a_disabled_leg_needs_a_reason_and_one_leg_must_be_built() -> None:
    assert "legs.cpu.disabled" in _err({"legs": {"cpu": {"backend": "cpu", "disabled": " "}}})
    assert "not disabled" in _err({"legs": {"cpu": {"backend": "cpu", "disabled": "later"}}})


def test_the_shipped_matrix_builds_every_leg_it_declares_the_cuda_12_8_line_and_windows_arm64_cuda_too() -> (
    None
):
    m = load_matrix(ROOT / "matrix.toml")
    # 39 declared, 39 built: the CUDA 12.8 line (NVIDIA's redistributable archives) and Windows arm64 CUDA 13.4.
    assert len(m.legs) == len(m.all_legs) == 39 and not m.disabled_legs
    assert sorted(name for name, leg in m.legs.items() if leg.cuda_line == "12") == sorted(
        [f"cuda-12.8-{p}" for p in ("legacy", "older", "newer", "portable")]
        + [f"cuda-windows-12.8-{p}" for p in ("legacy", "older", "newer", "portable")]
    )
    # The reference's Windows arm64 CUDA 13.4 bundle, on its own line (the other 13.x legs keep 13.2.86).
    arm = m.leg("cuda-windows-13-portable-arm64")
    assert (arm.os, arm.arch, arm.runner, arm.cuda_architectures, arm.cuda_line) == (
        "windows",
        "arm64",
        "windows-2022",
        ("120", "121"),
        "13.4",
    )
    assert [name for name, leg in m.legs.items() if leg.cuda_line == "13.4"] == [arm.name]
