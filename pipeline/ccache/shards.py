"""A leg's compile steps, split into its shards (pure): which of Ninja's edges each shard job compiles.

A shard job configures the leg as its build does and asks Ninja for every
edge of the plan with its command (``ninja -t compdb``). The compile steps
are the edges whose command starts with the ccache the configure line names
as every language's compiler launcher (C, C++, and CUDA or HIP): whatever the
language, every object the leg's build would look up in its cache, and
nothing else (links, code generators, the shaders glslc compiles).

The split is the same on every runner: it depends only on the plan (the
outputs, as Ninja names them relative to the build folder, and each step's
command) and on the sizes of the sources, which come from the run's one
source archive. Steps are placed largest estimated cost first, ties broken
by output path, each on the shard with the least estimated work so far
(ties: the lower index): the longest-processing-time rule, whose largest
shard is within 4/3 of the best possible split of the same estimates.
Round robin over Ninja's listing, the reference release's split, puts the
few very long device units wherever the listing order drops them.

The estimate (:func:`estimated_cost`) is a unit of work per compiler pass:
``(COST_BASE_BYTES + source bytes)`` for each pass, one pass for a host
compile, one more per GPU target for a device compile (nvcc and clang compile
each target apart). It is fitted to a cold build of the real tree
(docs/caches.md, "Shards for a cold build"), and only has to rank the steps:
a wrong estimate makes shards uneven, never wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

# One compiler pass's fixed cost, in bytes of source: what a small unit pays before its own lines (the headers
# it includes, the compiler's start). Fitted to the real tree's cold rocm-linux-gfx110X build, one target
# (docs/caches.md): its 108 host compiles took 9.6 s plus 0.039 s per KB of source, so a pass's fixed part is
# about 240 KB; its 144 device compiles a median 2.1 times a host compile's (two passes here).
COST_BASE_BYTES = 240_000
# What a device compile's command says once per GPU target.
_TARGET_FLAG = re.compile(r"(?:--generate-code[= ]|-gencode[= ]|--offload-arch=|--cuda-gpu-arch=)")
# Sources whose compiles are device compiles (ggml-hip compiles its .cu files as HIP, with ``-x hip``).
_DEVICE_SUFFIXES = (".cu", ".hip")
_DEVICE_LANGUAGE = re.compile(r"(?:^|\s)-x\s*(?:hip|cu|cuda)\b")
# The phony target a shard's Ninja file adds.
SHARD_TARGET = "pipeline-shard"


@dataclass(frozen=True, kw_only=True)
class CompileStep:
    """One compile step of the leg's plan: the object Ninja names, its source and what it costs."""

    # The edge's output as Ninja names it (relative to the build folder for CMake's objects).
    output: str
    # The source file as the command names it.
    source: str
    # 0: a host compile; else the GPU targets a device compile builds for (one at least).
    device_targets: int = 0
    # The source's size, filled in from the tree (:func:`with_sizes`); 0 until then.
    source_bytes: int = 0


def first_word(command: str) -> str:
    """The program a command line starts with: its first word, or its first quoted string."""
    text = command.lstrip()
    if text.startswith('"'):
        end = text.find('"', 1)
        return text[1:end] if end > 0 else text[1:]
    return text.split(maxsplit=1)[0] if text else ""


def _same_program(word: str, launcher: str, *, windows: bool) -> bool:
    if windows:
        return word.replace("\\", "/").casefold() == launcher.replace("\\", "/").casefold()
    return word == launcher


def device_targets(command: str, source: str) -> int:
    """The GPU targets a compile builds for: 0 for a host compile, at least 1 for a device one."""
    if not (source.lower().endswith(_DEVICE_SUFFIXES) or _DEVICE_LANGUAGE.search(command)):
        return 0
    return max(1, len(_TARGET_FLAG.findall(command)))


def compile_steps(compdb: Any, launcher: str, *, windows: bool = False) -> list[CompileStep]:
    """The compile steps of ``ninja -t compdb``'s answer (a JSON list of edges with ``command``, ``file`` and
    ``output``): the edges whose command is run by ``launcher`` (the configure line's ccache), sorted by output.

    ValueError for an answer that is not Ninja's compilation database or names an output twice."""
    if not isinstance(compdb, list):
        raise ValueError("not a compilation database: expected a JSON list of edges")
    steps: dict[str, CompileStep] = {}
    for edge in compdb:
        if not isinstance(edge, dict):
            raise ValueError("not a compilation database: an edge is not an object")
        command, output, source = edge.get("command"), edge.get("output"), edge.get("file")
        if not (isinstance(command, str) and isinstance(output, str) and isinstance(source, str)):
            raise ValueError("not a compilation database: an edge lacks command, output or file")
        if not _same_program(first_word(command), launcher, windows=windows):
            continue
        if output in steps:
            raise ValueError(f"the plan compiles {output} twice")
        steps[output] = CompileStep(
            output=output, source=source, device_targets=device_targets(command, source)
        )
    return [steps[name] for name in sorted(steps)]


def with_sizes(steps: Iterable[CompileStep], sizes: Mapping[str, int]) -> list[CompileStep]:
    """``steps`` with each source's size from ``sizes`` (source -> bytes; a source not there counts 0)."""
    return [replace(step, source_bytes=max(0, sizes.get(step.source, 0))) for step in steps]


def estimated_cost(step: CompileStep) -> int:
    """A step's estimated work: ``COST_BASE_BYTES`` plus its source's bytes, once per compiler pass."""
    passes = 1 + step.device_targets
    return (COST_BASE_BYTES + step.source_bytes) * passes


def split_steps(steps: Sequence[CompileStep], count: int) -> tuple[tuple[CompileStep, ...], ...]:
    """``steps`` in ``count`` disjoint parts that together are all of them, each sorted by output: the largest
    estimated cost first onto the least loaded part (see the module docstring). The same steps give the
    same parts whatever their order."""
    if count < 1:
        raise ValueError(f"a split into {count} parts")
    outputs = [step.output for step in steps]
    if len(set(outputs)) != len(outputs):
        raise ValueError("a step is listed twice")
    loads = [0] * count
    parts: list[list[CompileStep]] = [[] for _ in range(count)]
    for step in sorted(steps, key=lambda s: (-estimated_cost(s), s.output)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        parts[lightest].append(step)
        loads[lightest] += estimated_cost(step)
    return tuple(tuple(sorted(part, key=lambda s: s.output)) for part in parts)


def ninja_path(path: str) -> str:
    """``path`` as a Ninja file writes it in a build statement (``$``, space and ``:`` escaped)."""
    if "\n" in path:
        raise ValueError(f"an output name with a line break: {path!r}")
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def shard_ninja_file(outputs: Sequence[str], *, label: str, manifest: str = "build.ninja") -> str:
    """A Ninja file that is the leg's own plan plus one phony target, :data:`SHARD_TARGET`, over ``outputs``:
    ``ninja -f <this> pipeline-shard`` builds those objects and what they need (generated headers), nothing
    else. The file makes no rule to rebuild itself, so Ninja never re-runs CMake for it."""
    lines = [
        f"# The pipeline's shard {label}: {len(outputs)} compile steps of the plan in {manifest}.",
        f"include {ninja_path(manifest)}",
        f"build {SHARD_TARGET}: phony" + "".join(f" $\n    {ninja_path(o)}" for o in outputs),
        "",
    ]
    return "\n".join(lines)
