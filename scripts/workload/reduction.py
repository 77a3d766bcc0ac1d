"""The one reduction that makes a real llama.cpp build of a shipped leg fit CI, declared once.

Here, among the scripts, because the GPU check (scripts/gpu_check/) and the
benchmark build with it too and a script never imports the tests; the tests
import it from here as well. A test that builds llama.cpp builds a leg of the
shipped ``matrix.toml`` with exactly these changes and nothing else
(tests/unit/test_tested_flags.py checks every such test); ``REDUCTIONS``
names each part with what it saves and what the reduced build still proves:

- which programs: ``LLAMA_BUILD_TOOLS/EXAMPLES/SERVER/APP=OFF`` (``APP`` needs
  the tools' ``build-info.h``) and the programs check-bundle's smoke run needs
  added back (``REDUCED_PROGRAMS``, built by ``llama_programs.cmake``):
  ``--version`` (all), the tokenizer check (``llama-tokenize``), the backends
  and one forward pass (``llama-simple``). The shipped cpu leg builds all
  three with its tools and examples;
- which CPU variants: ``GGML_CPU_ALL_VARIANTS=OFF``, one CPU backend
  (``GGML_NATIVE=OFF`` as shipped): the full variant set is 561 Ninja steps,
  over an hour on 2 cores.

- which device kernels (the cuda and rocm legs; a no-op elsewhere):
  ``GGML_CUDA_FA=OFF``, ggml's own switch for its flash-attention kernels.
  Every ``fattn*`` unit is still compiled, linked and bundled, with the
  kernels' bodies left out (``GGML_CUDA_NO_FA``); the forward pass then takes
  ggml's attention without them. Those are the heaviest device units of
  ggml-cuda and ggml-hip (37 of ggml-hip's 145 device steps): see
  docs/testing.md for what it saves;
- which CUDA architectures (the cuda leg only): ``CUDA_ARCHITECTURE``, one
  of the shipped leg's ``cuda_architectures`` (see its comment);
- which GPU targets (a rocm leg only): ``ROCM_TARGET``, one of the shipped
  leg's ``targets`` (see its comment).

Everything else (TLS, RPC, backend loading, the shared ``[cmake] args``) is
the shipped configuration.

The full shipped legs (``nox -s e2e``, tests/e2e/) keep the programs alone
(``PROGRAMS_ONLY``): every CPU variant, flash-attention kernel, CUDA
architecture and GPU target as shipped; hours on 2 cores.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_MATRIX = ROOT / "matrix.toml"
PROGRAMS_CMAKE = Path(__file__).resolve().with_name("llama_programs.cmake")
# The programs the reduced build adds back, the one list of them.
REDUCED_PROGRAMS = ("llama-gguf-split", "llama-tokenize", "llama-simple")
# The program whose --version a test reads (at the bundle's root, as upstream's bundles have it).
PROGRAM = REDUCED_PROGRAMS[0]

# CMake cache variable -> the value the reduced build gives it.
REDUCTION: dict[str, str] = {
    "LLAMA_BUILD_TOOLS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    "LLAMA_BUILD_SERVER": "OFF",
    "LLAMA_BUILD_APP": "OFF",
    "GGML_CPU_ALL_VARIANTS": "OFF",
    "GGML_CUDA_FA": "OFF",
    "CMAKE_PROJECT_llama.cpp_INCLUDE": str(PROGRAMS_CMAKE),
    "PIPELINE_E2E_PROGRAMS": ";".join(REDUCED_PROGRAMS),
}

# The part of the reduction the full shipped legs keep: which programs (nothing else differs from the release).
PROGRAMS_ONLY: dict[str, str] = {
    name: value
    for name, value in REDUCTION.items()
    if name.startswith("LLAMA_BUILD_") or name in ("CMAKE_PROJECT_llama.cpp_INCLUDE", "PIPELINE_E2E_PROGRAMS")
}

# The one CUDA architecture a real-tree cuda build compiles, of the shipped seven. Why one: every .cu
# unit is compiled once per architecture (nvcc's device pass), so the shipped list costs 3.4 to 5.3
# times one (measured: docs/testing.md, "What each reduction saves"), hours on 2 cores; one
# architecture compiles every unit, links every library and gives the bundle its whole CUDA runtime
# closure, which is what the test proves. Why 89: a real shipped entry in the shipped form (SASS and
# PTX), the one measured (294 Ninja steps); the lent GPU check (scripts/gpu_check/) builds 90 for
# its H200 with nothing reduced but the programs. The CUDA 12 test
# (tests/integration/test_real_tree_cuda12.py) builds it too: cuda-12.8-older lists 89, and Debian's
# CUDA 12.4 compiles it (not 100 or 120, which the other 12.8 profiles add).
CUDA_ARCHITECTURE = "89"

# The one GPU target a real-tree rocm build compiles, of the shipped gfx110X family's four. Why one:
# clang compiles every HIP unit once per target, so the family costs 2.5 to 2.7 times one (measured, as
# above; the 145 device units of ggml-hip take about 15 min on 2 cores for gfx1100 alone); one target
# compiles every unit, links every library and picks that target's rocBLAS kernels, which is what the
# test proves. Why gfx1100: the family's first, the seed's own card (docs/benchmarks.md). The lent GPU
# check (scripts/gpu_check/, --backend rocm) builds the machine's own target instead, with nothing
# else changed.
ROCM_TARGET = "gfx1100"


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
        variables=(
            "LLAMA_BUILD_TOOLS",
            "LLAMA_BUILD_EXAMPLES",
            "LLAMA_BUILD_SERVER",
            "LLAMA_BUILD_APP",
            "CMAKE_PROJECT_llama.cpp_INCLUDE",
            "PIPELINE_E2E_PROGRAMS",
        ),
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


def reduce_targets(backend: str, shipped: Sequence[str], *, programs_only: bool = False) -> list[str]:
    """A leg's GPU ``targets`` as a real-tree build compiles them: ``[ROCM_TARGET]`` for a rocm leg that ships it
    (all of them for the full shipped legs, ``programs_only``)."""
    if backend != "rocm" or programs_only:
        return list(shipped)
    if ROCM_TARGET not in shipped:
        raise AssertionError(f"{ROCM_TARGET} is not one of the shipped targets {list(shipped)}")
    return [ROCM_TARGET]


def reduce_architectures(leg: str, data: dict[str, Any], *, programs_only: bool = False) -> list[str] | None:
    """A cuda leg's own ``cuda_architectures`` as a real-tree build compiles them: ``[CUDA_ARCHITECTURE]`` (all of
    them for the full shipped legs, ``programs_only``); None for a leg that lists none."""
    shipped = data.get("cuda_architectures")
    if data.get("backend") != "cuda" or programs_only:
        return None if shipped is None else list(shipped)
    if shipped is None:
        # A profile leg's list lives in [cuda_profiles]: not narrowed here, so never silently left whole.
        raise AssertionError(
            f"[legs.{leg}] takes cuda_profile {data.get('cuda_profile')!r}: the reduction narrows "
            "a leg's own cuda_architectures only"
        )
    if CUDA_ARCHITECTURE not in shipped:
        raise AssertionError(
            f"{CUDA_ARCHITECTURE} is not one of [legs.{leg}]'s cuda_architectures {list(shipped)}"
        )
    return [CUDA_ARCHITECTURE]


def reduction_flags(*, programs_only: bool = False) -> list[str]:
    return [f"-D{name}={value}" for name, value in (PROGRAMS_ONLY if programs_only else REDUCTION).items()]


def flag_variable(flag: str) -> str | None:
    """``GGML_RPC`` for ``-DGGML_RPC=ON`` (and ``-DGGML_RPC:BOOL=ON``); None for anything else."""
    if not flag.startswith("-D") or "=" not in flag:
        return None
    return flag[2:].split("=", 1)[0].split(":", 1)[0]


def reduce_leg_flags(shipped: Sequence[str], *, programs_only: bool = False) -> list[str]:
    """A leg's shipped ``cmake_args`` with the reduction applied: its variables replaced, the rest kept in order
    (``programs_only``: the programs' variables alone, for the full shipped legs)."""
    reduction = PROGRAMS_ONLY if programs_only else REDUCTION
    return [f for f in shipped if flag_variable(f) not in reduction] + reduction_flags(
        programs_only=programs_only
    )


def shipped_flags(leg: str) -> tuple[list[str], list[str]]:
    """The shipped matrix.toml's ``[cmake] args`` and leg ``leg``'s ``cmake_args``."""
    data = tomllib.loads(SHIPPED_MATRIX.read_text(encoding="utf-8"))
    return list(data["cmake"]["args"]), list(data["legs"][leg].get("cmake_args", []))


def is_reduced_from(tested: Sequence[str], shipped: Sequence[str]) -> bool:
    """True when ``tested`` is exactly ``shipped`` with the reduction applied, nothing else."""
    return list(tested) == reduce_leg_flags(shipped)


def toml_list(flags: Sequence[str]) -> str:
    """``flags`` as a TOML array (one per line), for a test's matrix.toml."""
    import json

    return "[\n" + "".join(f"    {json.dumps(f)},\n" for f in flags) + "]"


def _sections(text: str) -> list[tuple[str, str]]:
    """(header, text) of each ``[table]`` of ``text``; the first item holds what precedes any header."""
    parts = re.split(r"(?m)^(?=\[)", text)
    out = []
    for part in parts:
        header = re.match(r"\[\[?([^\]]+)\]", part)
        out.append((header.group(1).strip() if header else "", part))
    return out


def _constant(text: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: text


def reduced_matrix(
    shipped_text: str,
    *,
    legs: Iterable[str],
    source_repo: str,
    programs_only: bool = False,
    shared_units: str | None = None,
    shards: Mapping[str, int] | None = None,
) -> str:
    """The shipped matrix as a run of ``legs`` only, reduced, with the source fetched from ``source_repo``
    (``programs_only``: the full shipped legs, only their programs reduced; ``shared_units``: a ccache
    remote storage the legs read, never write, the objects another leg compiled from, as ``[ccache] remote``;
    ``shards``: leg -> the ``shards`` a leg key test gives it, a key the product sets on other legs, which
    changes how a cold cache is made and nothing the leg builds: the sharded cpu leg of the shards' proof).

    Text in, text out: every other key, comment and pin stays as shipped. The
    result is parsed again and compared with the shipped data: anything else
    changed is an AssertionError, not a silent difference.
    """
    keep = set(legs)
    shipped = tomllib.loads(shipped_text)
    unknown = keep - set(shipped["legs"])
    if unknown:
        raise AssertionError(f"not legs of the shipped matrix: {sorted(unknown)}")
    out = []
    for header, part in _sections(shipped_text):
        if header.startswith("legs."):
            name = header.removeprefix("legs.").strip('"')  # legs."cuda-12.8-older": a quoted key
            if name not in keep:
                continue
            flags = reduce_leg_flags(shipped["legs"][name].get("cmake_args", []), programs_only=programs_only)
            line = f"cmake_args = {json.dumps(flags)}\n"
            # A function, not the string itself: re would read backslashes in a Windows path as escapes.
            part, count = re.subn(r"(?ms)^cmake_args = \[.*?\]\n", _constant(line), part)
            if count != 1:
                raise AssertionError(f"[{header}]: expected one cmake_args array, found {count}")
            if name in (shards or {}):
                part = re.sub(r"(?m)^shards = \d+\n", "", part)
                part = part.replace(f"[{header}]\n", f"[{header}]\nshards = {(shards or {})[name]}\n", 1)
            leg = shipped["legs"][name]
            shipped_targets = leg.get("targets")
            targets = shipped_targets and reduce_targets(
                leg["backend"], shipped_targets, programs_only=programs_only
            )
            if targets and targets != shipped_targets:
                line = f"targets = {json.dumps(targets)}\n"
                part, count = re.subn(r"(?m)^targets = \[.*?\]\n", _constant(line), part)
                if count != 1:
                    raise AssertionError(f"[{header}]: expected one targets line, found {count}")
            architectures = reduce_architectures(name, leg, programs_only=programs_only)
            if architectures is not None and architectures != leg.get("cuda_architectures"):
                line = f"cuda_architectures = {json.dumps(architectures)}\n"
                part, count = re.subn(r"(?m)^cuda_architectures = \[.*?\]\n", _constant(line), part)
                if count != 1:
                    raise AssertionError(f"[{header}]: expected one cuda_architectures line, found {count}")
        elif header == "ccache" and shared_units is not None:
            line = f"[ccache]\nremote = {json.dumps(shared_units)}\n"
            part, count = re.subn(r"(?m)^\[ccache\]\n", _constant(line), part)
            if count != 1:
                raise AssertionError(f"[ccache]: expected one header line, found {count}")
        elif header == "source":
            part, count = re.subn(r'(?m)^repo = ".*"$', _constant(f"repo = {json.dumps(source_repo)}"), part)
            if count != 1:
                raise AssertionError(f"[source]: expected one repo line, found {count}")
        out.append(part)
    text = "".join(out)
    expected: dict[str, Any] = {
        **shipped,
        "source": {**shipped["source"], "repo": source_repo},
        **({"ccache": {**shipped["ccache"], "remote": shared_units}} if shared_units is not None else {}),
        "legs": {
            name: {
                **leg,
                "cmake_args": reduce_leg_flags(leg.get("cmake_args", []), programs_only=programs_only),
                **(
                    {"targets": reduce_targets(leg["backend"], leg["targets"], programs_only=programs_only)}
                    if "targets" in leg
                    else {}
                ),
                **(
                    {"cuda_architectures": reduce_architectures(name, leg, programs_only=programs_only)}
                    if "cuda_architectures" in leg
                    else {}
                ),
                **({"shards": (shards or {})[name]} if name in (shards or {}) else {}),
            }
            for name, leg in shipped["legs"].items()
            if name in keep
        },
    }
    if tomllib.loads(text) != expected:
        raise AssertionError("the reduced matrix differs from the shipped one by more than the reduction")
    return text
