"""The one reduction that makes a real llama.cpp build of a shipped leg fit CI (see scripts/reduction.py).

Declared among the scripts, because the GPU check builds with it too and a
script never imports the tests; every test takes it from here.
"""

from scripts.reduction import (
    CUDA_ARCHITECTURE,
    PROGRAM,
    PROGRAMS_CMAKE,
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
    "CUDA_ARCHITECTURE", "PROGRAM", "PROGRAMS_CMAKE", "REDUCED_PROGRAMS", "REDUCTION", "ROCM_TARGET", "SHIPPED_MATRIX",
    "flag_variable", "is_reduced_from", "reduce_leg_flags", "reduce_targets", "reduced_matrix", "reduction_flags", "shipped_flags",
    "toml_list",
]
