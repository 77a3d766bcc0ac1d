"""The one reduction that makes a real-tree build of a shipped leg fit CI, declared once.

A real-tree test builds a leg of the shipped ``matrix.toml`` with exactly the
shipped flags followed by :data:`REDUCTION`, and nothing else: CMake keeps the
last ``-D`` of a name, so the reduction overrides the shipped value where both
name one variable, and every other shipped flag is built as shipped.

- ``GGML_CPU_ALL_VARIANTS=OFF``: one CPU backend instead of every x86 variant
  (561 Ninja steps for the full cpu leg, over an hour on 2 cores);
- ``LLAMA_BUILD_TOOLS/EXAMPLES/SERVER/APP=OFF`` (APP wants the tools'
  ``build-info.h``), plus one program, ``llama-gguf-split``, added by
  ``llama_one_tool.cmake`` so that the bundle still has a program that answers
  ``--version``.

The TLS choice (``LLAMA_OPENSSL``) is not part of the reduction: that is the
product's decision, and a reduced build must link what the shipped one links.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ONE_TOOL = Path(__file__).resolve().with_name("llama_one_tool.cmake")
# The program ONE_TOOL adds (the bundle's path of it).
PROGRAM = "bin/llama-gguf-split"

REDUCTION: tuple[str, ...] = (
    "-DGGML_CPU_ALL_VARIANTS=OFF",
    "-DLLAMA_BUILD_TOOLS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    f"-DCMAKE_PROJECT_llama.cpp_INCLUDE={ONE_TOOL}",
)


def reduced_flags(shipped: Sequence[str]) -> list[str]:
    """The shipped leg's flags, then the reduction."""
    return [*shipped, *REDUCTION]


def is_reduced_from(tested: Sequence[str], shipped: Sequence[str]) -> bool:
    """True when ``tested`` is exactly ``shipped`` plus :data:`REDUCTION`, nothing else."""
    return list(tested) == reduced_flags(shipped)


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


def reduced_matrix(shipped_text: str, *, legs: Iterable[str], source_repo: str) -> str:
    """The shipped matrix as a run of ``legs`` only, reduced, with the source fetched from ``source_repo``.

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
            name = header.removeprefix("legs.")
            if name not in keep:
                continue
            flags = reduced_flags(shipped["legs"][name].get("cmake_args", []))
            line = f"cmake_args = {json.dumps(flags)}\n"
            # A function, not the string itself: re would read backslashes in a Windows path as escapes.
            part, count = re.subn(r"(?ms)^cmake_args = \[.*?\]\n", _constant(line), part)
            if count != 1:
                raise AssertionError(f"[{header}]: expected one cmake_args array, found {count}")
        elif header == "source":
            part, count = re.subn(r'(?m)^repo = ".*"$', _constant(f"repo = {json.dumps(source_repo)}"), part)
            if count != 1:
                raise AssertionError(f"[source]: expected one repo line, found {count}")
        out.append(part)
    text = "".join(out)
    expected: dict[str, Any] = {
        **shipped,
        "source": {**shipped["source"], "repo": source_repo},
        "legs": {
            name: {**leg, "cmake_args": reduced_flags(leg.get("cmake_args", []))}
            for name, leg in shipped["legs"].items()
            if name in keep
        },
    }
    if tomllib.loads(text) != expected:
        raise AssertionError("the reduced matrix differs from the shipped one by more than the reduction")
    return text
