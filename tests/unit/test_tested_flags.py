"""The shipped configuration is what is tested.

Every test module that builds the real llama.cpp tree (it takes the tree from
scripts/workload/llama_sdist.py or the forge of tests/support/llama_tree.py)
declares the legs it builds (``TESTED_LEGS``: leg -> its ``cmake_args``,
``TESTED_SHARED``: the ``[cmake] args``) and writes its matrix.toml from them,
unless ``reduced_matrix`` writes it. Each tested leg must be the shipped
matrix.toml's leg plus the one reduction of scripts/workload/reduction.py and
nothing else: no flag the product never sets (``-DLLAMA_OPENSSL=OFF`` hid a
broken bundle for the whole project's life), no shipped flag dropped.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from pipeline.inputs.matrix import load_matrix
from scripts.workload.reduction import (
    CUDA_ARCHITECTURE,
    PROGRAMS_ONLY,
    REDUCTION,
    REDUCTIONS,
    ROCM_TARGET,
    SHIPPED_MATRIX,
    flag_variable,
    reduced_matrix,
    reduction_flags,
)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = load_matrix(ROOT / "matrix.toml")
# A module that builds the real tree takes it from the sdist (scripts/workload/llama_sdist.py) or from the forge
# made of it (tests/support/llama_tree.py).
_USES_TREE = re.compile(r"\b(?:standalone_tree|extract_tree|prepared_forge|make_forge)\(")
# One whose matrix reduced_matrix writes is the shipped legs plus the reduction by construction (tested below).
_REDUCED_MATRIX = re.compile(r"\breduced_matrix\(")


def tree_test_modules() -> list[str]:
    """Test modules that build the real tree from a matrix of their own (found by the calls that give them the
    tree, so a new one cannot be missed)."""
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if _USES_TREE.search(text) and not _REDUCED_MATRIX.search(text):
            found.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


def test_the_real_tree_tests_are_found() -> None:
    assert "tests.integration.test_real_tree" in tree_test_modules()


def _declared(module: ModuleType) -> tuple[list[str], dict[str, list[str]]]:
    shared, legs = getattr(module, "TESTED_SHARED", None), getattr(module, "TESTED_LEGS", None)
    assert isinstance(shared, list) and isinstance(legs, dict) and legs, (
        f"{module.__name__} builds the real tree: it must declare TESTED_SHARED and TESTED_LEGS"
    )
    return shared, legs


@pytest.mark.parametrize("name", tree_test_modules())
def test_every_tested_leg_is_the_shipped_leg_plus_the_reduction(name: str) -> None:
    shared, legs = _declared(importlib.import_module(name))
    assert shared == list(SHIPPED.cmake_args)
    for leg, tested in legs.items():
        shipped = list(SHIPPED.leg(leg).cmake_args)
        kept = [f for f in shipped if flag_variable(f) not in REDUCTION]
        # Nothing but the shipped flags the reduction does not touch, then the reduction itself.
        assert tested == kept + reduction_flags(), f"{name}: leg {leg}"
        assert set(tested) - set(shipped) <= set(reduction_flags())
        assert {flag_variable(f) for f in set(shipped) - set(tested)} <= set(REDUCTION)


@pytest.mark.parametrize("name", tree_test_modules())
def test_the_matrix_a_tree_test_builds_with_holds_exactly_the_declared_flags(
    name: str, tmp_path: Path
) -> None:
    module = importlib.import_module(name)
    shared, legs = _declared(module)
    template = getattr(module, "MATRIX", None)
    assert isinstance(template, str), f"{name}: its matrix.toml template MATRIX"
    text = template.format(
        upstream="/nowhere/upstream", min_age=6, pr_repo="a/b", pr_number=1, pr_sha="0" * 40
    )
    matrix = load_matrix(_write(tmp_path / "matrix.toml", text))
    assert list(matrix.cmake_args) == shared
    assert {name: list(matrix.leg(name).cmake_args) for name in matrix.legs} == legs


def test_the_reduction_only_turns_things_off_and_adds_programs_back() -> None:
    """Programs, CPU variants and flash-attention kernels, nothing else: a reduction that switched a feature on
    would be untested product."""
    flags = dict(f[2:].split("=", 1) for f in reduction_flags())
    include = flags.pop("CMAKE_PROJECT_llama.cpp_INCLUDE")
    assert Path(include).name == "llama_programs.cmake" and Path(include).is_file()
    # Programs the shipped cpu leg builds too (tools and examples), added back by name.
    assert flags.pop("PIPELINE_E2E_PROGRAMS").split(";") == [
        "llama-gguf-split",
        "llama-tokenize",
        "llama-simple",
    ]
    assert set(flags.values()) == {"OFF"}
    assert set(flags) == {
        "LLAMA_BUILD_TOOLS",
        "LLAMA_BUILD_EXAMPLES",
        "LLAMA_BUILD_SERVER",
        "LLAMA_BUILD_APP",
        "GGML_CPU_ALL_VARIANTS",
        "GGML_CUDA_FA",
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", tree_test_modules())
def test_a_tree_test_builds_the_shipped_toolchain_and_one_declared_gpu_architecture(
    name: str, tmp_path: Path
) -> None:
    """Every other leg key as shipped; a cuda leg's architectures reduced to the declared one, a shipped one."""
    template = importlib.import_module(name).MATRIX
    text = template.format(
        upstream="/nowhere/upstream", min_age=6, pr_repo="a/b", pr_number=1, pr_sha="0" * 40
    )
    matrix = load_matrix(_write(tmp_path / "matrix.toml", text))
    for leg in matrix.legs.values():
        shipped = SHIPPED.leg(leg.name)
        assert (leg.backend, leg.os, leg.family) == (shipped.backend, shipped.os, shipped.family)
        # The bundle's glibc floor as shipped: a test built on a newer distribution expects its refusal.
        assert leg.glibc_max == shipped.glibc_max, f"{name}: {leg.name}"
        # A rocm leg's GPU targets reduced to the declared one; every other leg's as shipped.
        assert leg.targets == ((ROCM_TARGET,) if leg.backend == "rocm" else shipped.targets)
        if leg.backend == "cuda":
            # One architecture the shipped leg builds, on the shipped leg's CUDA line, with that line's pins.
            assert leg.cuda_architectures == (CUDA_ARCHITECTURE,)
            assert CUDA_ARCHITECTURE in shipped.cuda_architectures, f"{name}: {leg.name}"
            assert (leg.cuda_line, leg.bundle_template) == (shipped.cuda_line, shipped.bundle_template)
            assert matrix.toolchains.cuda == SHIPPED.toolchains.cuda
            assert matrix.toolchains.cuda_for(leg.cuda_line) == SHIPPED.toolchains.cuda_for(shipped.cuda_line)
        else:
            assert leg.cuda_architectures == shipped.cuda_architectures


def test_the_declared_cuda_architecture_is_one_the_shipped_leg_builds() -> None:
    assert CUDA_ARCHITECTURE in SHIPPED.leg("cuda").cuda_architectures


def test_the_declared_rocm_target_is_one_the_shipped_linux_gfx110x_leg_builds() -> None:
    assert ROCM_TARGET in SHIPPED.leg("rocm-linux-gfx110X").targets


def test_every_variable_of_the_reduction_is_named_with_what_it_saves_and_still_proves() -> None:
    named = [variable for part in REDUCTIONS for variable in part.variables]
    assert sorted(named) == sorted(REDUCTION) and len(set(named)) == len(named)
    assert all(part.saving and part.still_proves for part in REDUCTIONS)
    # The two leg keys the reduction narrows and the one [ccache] key it adds, beside its CMake variables.
    assert {part.name for part in REDUCTIONS if not part.variables} == {
        "one CUDA architecture (cuda_architectures)",
        "one GPU target (targets)",
        "units shared between legs ([ccache] remote, read-only)",
    }


def test_the_full_shipped_legs_reduce_the_programs_alone(tmp_path: Path) -> None:
    """nox -s e2e: every CPU variant, flash-attention kernel, CUDA architecture and GPU target as shipped."""
    from tests.e2e.test_shipped_legs import CASES

    assert set(PROGRAMS_ONLY) < set(REDUCTION)
    assert "GGML_CPU_ALL_VARIANTS" not in PROGRAMS_ONLY and "GGML_CUDA_FA" not in PROGRAMS_ONLY
    legs = [case.leg for case in CASES]
    text = reduced_matrix(
        SHIPPED_MATRIX.read_text(encoding="utf-8"),
        legs=legs,
        source_repo="/nowhere/llama.cpp",
        programs_only=True,
    )
    matrix = load_matrix(_write(tmp_path / "matrix.toml", text))
    assert sorted(matrix.legs) == sorted(legs)
    for name in legs:
        leg, shipped = matrix.leg(name), SHIPPED.leg(name)
        assert (leg.targets, leg.cuda_architectures) == (shipped.targets, shipped.cuda_architectures), name
        programs = [f"-D{variable}={value}" for variable, value in PROGRAMS_ONLY.items()]
        assert (
            list(leg.cmake_args)
            == [f for f in shipped.cmake_args if flag_variable(f) not in PROGRAMS_ONLY] + programs
        )
        # The shipped legs all build every CPU variant; the full legs keep that.
        assert "-DGGML_CPU_ALL_VARIANTS=ON" in leg.cmake_args, name


def test_the_shared_units_are_the_one_ccache_key_a_reduced_matrix_adds(tmp_path: Path) -> None:
    spec = "http://127.0.0.1:9/cache|read-only"
    shipped_text = SHIPPED_MATRIX.read_text(encoding="utf-8")
    text = reduced_matrix(shipped_text, legs=["cpu"], source_repo="/nowhere/llama.cpp", shared_units=spec)
    matrix = load_matrix(_write(tmp_path / "matrix.toml", text))
    assert matrix.ccache.remote == spec
    assert dataclasses.replace(matrix.ccache, remote=None) == SHIPPED.ccache
    # Without them, the shipped [ccache] table: no remote (the release's legs keep their caches apart).
    plain = load_matrix(
        _write(
            tmp_path / "plain.toml",
            reduced_matrix(shipped_text, legs=["cpu"], source_repo="/nowhere/llama.cpp"),
        )
    )
    assert plain.ccache.remote is None and SHIPPED.ccache.remote is None
    assert plain.ccache == SHIPPED.ccache


def test_the_reduced_cuda_leg_compiles_one_architecture_and_a_profile_leg_is_refused(tmp_path: Path) -> None:
    """The one CUDA architecture is the reduction's, written by reduced_matrix (not by each test's own table)."""
    shipped_text = SHIPPED_MATRIX.read_text(encoding="utf-8")
    text = reduced_matrix(shipped_text, legs=["cuda"], source_repo="/nowhere/llama.cpp")
    leg = load_matrix(_write(tmp_path / "matrix.toml", text)).leg("cuda")
    assert leg.cuda_architectures == (CUDA_ARCHITECTURE,)
    assert (
        CUDA_ARCHITECTURE in SHIPPED.leg("cuda").cuda_architectures
        and len(SHIPPED.leg("cuda").cuda_architectures) > 1
    )
    # A leg whose architectures come from a [cuda_profiles] table is not narrowed: an error, not the whole list.
    with pytest.raises(AssertionError, match="cuda_profile 'older'"):
        reduced_matrix(shipped_text, legs=["cuda-12.8-older"], source_repo="/nowhere/llama.cpp")
