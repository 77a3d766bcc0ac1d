"""The reduction that makes a real llama.cpp build of a shipped leg fit CI (declared in scripts/reduction.py).

Declared among the scripts, because the GPU check builds with it too and a
script never imports the tests; every test takes it from here. ``REDUCTIONS``
below names each part of it with what it saves and what the reduced build
still proves (tests/unit/test_tested_flags.py holds that every variable of
the reduction is one of them). The full shipped legs, with the programs alone
reduced (``PROGRAMS_ONLY``), are ``nox -s e2e`` (tests/e2e/).
"""

from __future__ import annotations

from dataclasses import dataclass

from scripts.reduction import (
    CUDA_ARCHITECTURE,
    PROGRAM,
    PROGRAMS_CMAKE,
    PROGRAMS_ONLY,
    REDUCED_PROGRAMS,
    REDUCTION,
    ROCM_TARGET,
    SHIPPED_MATRIX,
    flag_variable,
    is_reduced_from,
    reduce_leg_flags,
    reduce_targets,
    reduced_matrix,
    reduction_flags,
    shipped_flags,
    toml_list,
)

__all__ = [
    "CUDA_ARCHITECTURE", "PROGRAM", "PROGRAMS_CMAKE", "PROGRAMS_ONLY", "REDUCED_PROGRAMS", "REDUCTION", "REDUCTIONS",
    "ROCM_TARGET", "SHIPPED_MATRIX", "Reduction", "flag_variable", "is_reduced_from", "reduce_leg_flags",
    "reduce_targets", "reduced_matrix", "reduction_flags", "shipped_flags", "toml_list",
]


@dataclass(frozen=True)
class Reduction:
    """One part of the CI reduction: the CMake variables or leg keys it sets, what it saves, what still holds."""

    name: str
    # CMake variables of ``REDUCTION`` it sets (empty: it reduces a leg key, named in ``name``).
    variables: tuple[str, ...]
    # Measured on a 2-core machine (docs/testing.md has the runs they come from).
    saving: str
    still_proves: str


REDUCTIONS = (
    Reduction(
        name="programs",
        variables=("LLAMA_BUILD_TOOLS", "LLAMA_BUILD_EXAMPLES", "LLAMA_BUILD_SERVER", "LLAMA_BUILD_APP",
                   "CMAKE_PROJECT_llama.cpp_INCLUDE", "PIPELINE_E2E_PROGRAMS"),
        saving="116 compiles: 298 with tools, examples and server against 182 without (ninja -t commands of "
               "the tree configured with the cpu leg's other flags); nox -s e2e keeps this part too",
        still_proves="every library (ggml, its backends, llama, common) is built, linked and bundled as shipped; "
                     "the three programs check-bundle's smoke run starts (--version, the tokenizer pair, one "
                     "forward pass) are built from the tree's own sources",
    ),
    Reduction(
        name="CPU variants",
        variables=("GGML_CPU_ALL_VARIANTS",),
        saving="234 compiles: 416 with the 14 x86-64 variants against 182 with one (the same configure), in "
               "every leg that ships the CPU backend",
        still_proves="the CPU backend is built as a loadable module (GGML_BACKEND_DL, as shipped), found and "
                     "loaded from the bundle by the smoke run; the variants differ only in compiler flags",
    ),
    Reduction(
        name="flash-attention kernels",
        variables=("GGML_CUDA_FA",),
        saving="about 1,100 core-seconds of the cuda leg and 1,200 of the rocm leg (docs/testing.md, 'What each "
               "reduction saves': one unit of each kind compiled with and without it, CPU seconds, times the "
               "tree's 21 fattn-mma, 12 fattn-tile and 4 fattn-vec instances and fattn.cu): nvcc 8.3 s "
               "against 40.1 s for a fattn-mma instance, clang 6.8 s against 46.8 s",
        still_proves="every fattn unit is still compiled (without the kernels' bodies), linked into "
                     "libggml-cuda/libggml-hip and bundled; every other device unit (mmq, mmf, mmvq, ...) is "
                     "compiled for real; the bundle's closure and the cache hits are those of the shipped leg",
    ),
    Reduction(
        name="one CUDA architecture (cuda_architectures)",
        variables=(),
        saving="the shipped seven cost 3.4 to 5.3 times one in nvcc's CPU seconds, measured on two units "
               "(docs/testing.md): sum.cu 13.7 s against 46.8 s, mmq-instance-q4_0 36.5 s against 192.4 s; "
               "not seven times, since each unit's host compile is paid once",
        still_proves="every .cu unit goes through nvcc and ptxas for a real shipped architecture (89, SASS and "
                     "PTX); the runtime closure (libcudart, libcublas, libcublasLt) does not depend on it",
    ),
    Reduction(
        name="units shared between legs ([ccache] remote, read-only)",
        variables=(),
        saving="a second cold compile of the cpu leg's units, measured in two cold runs (docs/testing.md): act's "
               "first night took 131 of its 133 from the shared units, its build 8 s instead of 633 s; the vulkan "
               "leg 131 of its 291, its build 328 s instead of 522 s; the cuda leg already shared them",
        still_proves="act's night 2 must hit every unit but the two its tag changed in the caches it restored, none "
                     "in the shared units; the vulkan leg's "
                     "second build, in another folder, every unit and shader; a shared unit is a hit only when its "
                     "compile command, compiler and sources are the same (ccache's own hash)",
    ),
    Reduction(
        name="one GPU target (targets)",
        variables=(),
        saving="the gfx110X family's four targets cost 2.5 to 2.7 times one in clang's CPU seconds, measured on "
               "two units (docs/testing.md): sum.cu 3.2 s against 8.0 s, mmq-instance-q4_0 17.5 s against 46.5 s",
        still_proves="every HIP unit is compiled by clang for a real shipped target (gfx1100); the bundle's "
                     "rocBLAS kernel files are filtered to the leg's targets, one here",
    ),
)
