"""The files a CMake target made, as Ninja's own graph says: ``ninja -t query <target>``.

CMake's Ninja generator writes each target as a phony edge over what it links
(``build ggml-cuda: phony bin/ggml-cuda.dll``; a Linux shared library's
``bin/libggml-cuda.so``). A leg whose own build adds only some targets to its
``base``'s (Windows arm64 CUDA: ``ggml-cuda`` over the CPU build) ships exactly
those files: the graph names them, not a guess from the target's name.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import BuildError
from pipeline.processes.groups import run_child


def phony_inputs(query: str, target: str) -> tuple[str, ...]:
    """The inputs of ``target``'s phony edge in ``ninja -t query`` output (paths relative to the build folder).

    ``()`` when ``target`` is not a phony edge (a file, or a target that makes nothing).
    """
    lines = query.splitlines()
    try:
        start = lines.index(f"{target}:")
    except ValueError:
        return ()
    found: list[str] = []
    in_phony = False
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break  # the next node's block
        text = line.strip()
        if text.startswith("input:"):
            in_phony = text == "input: phony"
        elif text.startswith("outputs:"):
            in_phony = False
        elif in_phony and text:
            # "| implicit" and "|| order-only" inputs are not what the target makes.
            if text.startswith("|"):
                continue
            found.append(text)
    return tuple(found)


def target_files(ninja: Path, build: Path, targets: Sequence[str]) -> tuple[str, ...]:
    """The files ``targets`` made in ``build``, each once, in the targets' order; BuildError naming a target that
    names none (a typo in ``build_targets``, or a target that is not a library or program)."""
    made: list[str] = []
    for target in targets:
        try:
            proc = run_child([str(ninja), "-C", str(build), "-t", "query", target],
                             capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise BuildError(f"ninja -t query {target}: cannot run: {exc}") from None
        files = phony_inputs(proc.stdout, target)
        if proc.returncode != 0 or not files:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            raise BuildError(
                f"{build}: the target {target!r} makes no file"
                + (f" ({why[-1]})" if why and proc.returncode != 0 else "")
            )
        made.extend(f for f in files if f not in made)
    return tuple(made)
