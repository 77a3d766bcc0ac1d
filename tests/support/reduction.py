"""The one reduction that makes a real llama.cpp build of a shipped leg fit CI, declared once.

A test that builds llama.cpp builds a leg of the shipped ``matrix.toml``
with exactly these changes and nothing else (tests/unit/test_tested_flags.py
checks every such test):

- which programs: ``LLAMA_BUILD_TOOLS/EXAMPLES/SERVER/APP=OFF`` (``APP`` needs
  the tools' ``build-info.h``) and the programs check-bundle's smoke run needs
  added back (``REDUCED_PROGRAMS``, built by ``llama_programs.cmake``):
  ``--version`` (all), the tokenizer check (``llama-tokenize``), the backends
  and one forward pass (``llama-simple``). The shipped cpu leg builds all
  three with its tools and examples;
- which CPU variants: ``GGML_CPU_ALL_VARIANTS=OFF``, one CPU backend
  (``GGML_NATIVE=OFF`` as shipped): the full variant set is 561 Ninja steps,
  over an hour on 2 cores.

Everything else (TLS, RPC, backend loading, the shared ``[cmake] args``) is
the shipped configuration.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_MATRIX = ROOT / "matrix.toml"
PROGRAMS_CMAKE = Path(__file__).resolve().with_name("llama_programs.cmake")
# The programs the reduced build adds back, the one list of them.
REDUCED_PROGRAMS = ("llama-gguf-split", "llama-tokenize", "llama-simple")

# CMake cache variable -> the value the reduced build gives it.
REDUCTION: dict[str, str] = {
    "LLAMA_BUILD_TOOLS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    "LLAMA_BUILD_SERVER": "OFF",
    "LLAMA_BUILD_APP": "OFF",
    "GGML_CPU_ALL_VARIANTS": "OFF",
    "CMAKE_PROJECT_llama.cpp_INCLUDE": str(PROGRAMS_CMAKE),
    "PIPELINE_E2E_PROGRAMS": ";".join(REDUCED_PROGRAMS),
}


def reduction_flags() -> list[str]:
    return [f"-D{name}={value}" for name, value in REDUCTION.items()]


def flag_variable(flag: str) -> str | None:
    """``GGML_RPC`` for ``-DGGML_RPC=ON`` (and ``-DGGML_RPC:BOOL=ON``); None for anything else."""
    if not flag.startswith("-D") or "=" not in flag:
        return None
    return flag[2:].split("=", 1)[0].split(":", 1)[0]


def reduce_leg_flags(shipped: Sequence[str]) -> list[str]:
    """A leg's shipped ``cmake_args`` with the reduction applied: its variables replaced, the rest kept in order."""
    return [f for f in shipped if flag_variable(f) not in REDUCTION] + reduction_flags()


def shipped_flags(leg: str) -> tuple[list[str], list[str]]:
    """The shipped matrix.toml's ``[cmake] args`` and leg ``leg``'s ``cmake_args``."""
    data = tomllib.loads(SHIPPED_MATRIX.read_text(encoding="utf-8"))
    return list(data["cmake"]["args"]), list(data["legs"][leg].get("cmake_args", []))


def toml_list(flags: Sequence[str]) -> str:
    """``flags`` as a TOML array (one per line), for a test's matrix.toml."""
    import json

    return "[\n" + "".join(f"    {json.dumps(f)},\n" for f in flags) + "]"
