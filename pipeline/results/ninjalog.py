""".ninja_log -> where a build's wall clock went.

Ninja appends one line per output of every finished edge to ``.ninja_log``:
``start_ms <TAB> end_ms <TAB> mtime <TAB> output <TAB> command_hash``, times
in milliseconds since that build started. Versions 5, 6 and 7 share that
layout (they differ in the mtime unit and the hash function, neither of
which matters here).

What this module makes of it:

* Only the **last build** counts. Each ``ninja`` run appends to the file, and
  its times restart near zero, so a new build begins where an end time goes
  backwards, where an output already seen in the current build shows up
  again (a short previous build followed by a long one), or at a repeated
  header.
* A **multi-output edge** writes one line per output with the same start,
  end and hash: those lines are one step.
* Steps are classified by output name (only outputs are in the log):
  ``device`` (HIP/CUDA objects), ``host`` (other objects), ``link``
  (libraries and executables) and ``other`` (generators, custom commands).
* The **critical path** is read off the wall clock, not the dependency graph
  (the log has none): start at the step that ended last, then repeatedly
  step back to the latest-ending step that had ended by the time the current
  one started. The chain is what kept the build busy until its end; its
  gaps are time nothing on the chain ran.

Everything but :func:`read_log` and :func:`timings_for_build` is pure.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import BuildError

LOG_NAME = ".ninja_log"
SUPPORTED_VERSIONS = (5, 6, 7)
CLASSES = ("device", "host", "link", "other")
TOP_SLOWEST = 10
# Enough for a full llama.cpp CUDA or ROCm build; past it the record keeps the longest steps.
TIMELINE_LIMIT = 5000

_HEADER = re.compile(r"^# ninja log v(\d+)\s*$")
_DEVICE_SUFFIXES = (".cu.o", ".hip.o", ".cu.obj", ".hip.obj")
_OBJECT_SUFFIXES = (".o", ".obj")
_LINK_SUFFIXES = (".a", ".lib", ".so", ".dll", ".exe", ".dylib")
# libllama.so.0, libggml.so.0.9.4: versioned shared objects.
_VERSIONED_SO = re.compile(r"\.so(?:\.\d+)+$")


@dataclass(frozen=True, kw_only=True)
class Step:
    """One edge of the build: all of its outputs, when it ran, and its class."""

    outputs: tuple[str, ...]
    start_ms: int
    end_ms: int
    kind: str

    @property
    def name(self) -> str:
        return self.outputs[0]

    @property
    def duration_ms(self) -> int:
        return max(0, self.end_ms - self.start_ms)

    @property
    def seconds(self) -> float:
        return self.duration_ms / 1000.0


@dataclass(frozen=True, kw_only=True)
class NinjaLog:
    """The last build recorded in a ``.ninja_log``."""

    version: int
    # In the order Ninja finished them.
    steps: tuple[Step, ...]
    # Lines that were not five tab-separated fields (e.g. a line cut by a killed build),
    # or whose end precedes their start.
    skipped_lines: int = 0


@dataclass(frozen=True)
class _Entry:
    start_ms: int
    end_ms: int
    output: str
    command_hash: str


# --------------------------------------------------------------------------
# Classification


def classify(output: str) -> str:
    """``device``, ``host``, ``link`` or ``other`` for one output path."""
    path = output.replace("\\", "/")
    lower = path.lower()
    base = lower.rsplit("/", 1)[-1]
    if lower.endswith(_DEVICE_SUFFIXES):
        return "device"
    if lower.endswith(_OBJECT_SUFFIXES):
        return "host"
    if lower.endswith(_LINK_SUFFIXES) or _VERSIONED_SO.search(base):
        return "link"
    parent = lower.rsplit("/", 2)[-2] if "/" in lower else ""
    if parent == "bin" and "." not in base:
        return "link"
    return "other"


def classify_edge(outputs: Sequence[str]) -> str:
    """An edge's class: the first of device, host, link found among its outputs.

    A Windows link writes ``foo.dll`` and its import library ``foo.lib``; a
    compile may write a side file next to its object. The object or binary
    decides, never the side file.
    """
    kinds = {classify(o) for o in outputs}
    return next((k for k in CLASSES if k in kinds), "other")


# --------------------------------------------------------------------------
# Parsing


def parse_log(text: str, *, source: str = LOG_NAME) -> NinjaLog:
    """Parse a ``.ninja_log`` and keep its last build.

    Raises BuildError naming ``source`` when the header is missing or names a
    version this module does not read.
    """
    lines = text.splitlines()
    header = lines[0].strip().lstrip("\ufeff") if lines else ""
    match = _HEADER.match(header)
    if not match:
        raise BuildError(f"{source}: not a Ninja log (first line is not '# ninja log vN')")
    version = int(match.group(1))
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"v{v}" for v in SUPPORTED_VERSIONS)
        raise BuildError(f"{source}: Ninja log version v{version} is not supported (reads {supported})")

    builds: list[list[_Entry]] = [[]]
    seen: set[str] = set()
    last_end = -1
    skipped = 0
    for line in lines[1:]:
        if _HEADER.match(line.strip()):
            builds.append([])
            seen, last_end = set(), -1
            continue
        entry = _parse_line(line)
        if entry is None:
            skipped += line.strip() != ""
            continue
        if entry.end_ms < last_end or entry.output in seen:
            builds.append([])
            seen = set()
        builds[-1].append(entry)
        seen.add(entry.output)
        last_end = entry.end_ms
    return NinjaLog(version=version, steps=tuple(_group_edges(builds[-1])), skipped_lines=skipped)


def _parse_line(line: str) -> _Entry | None:
    fields = line.rstrip("\r\n").split("\t")
    if len(fields) != 5:
        return None
    start, end, _mtime, output, command_hash = fields
    try:
        entry = _Entry(int(start), int(end), output, command_hash)
    except ValueError:
        return None
    # A step that ends before it starts (or before the build) is a corrupt line: counted as skipped,
    # never a negative duration or wall time.
    return entry if 0 <= entry.start_ms <= entry.end_ms else None


def _group_edges(entries: Iterable[_Entry]) -> list[Step]:
    """One Step per edge: the lines of a multi-output edge share start, end and hash."""
    edges: dict[tuple[int, int, str], list[str]] = {}
    for e in entries:
        edges.setdefault((e.start_ms, e.end_ms, e.command_hash), []).append(e.output)
    return [
        Step(outputs=tuple(outs), start_ms=start, end_ms=end, kind=classify_edge(outs))
        for (start, end, _hash), outs in edges.items()
    ]


# --------------------------------------------------------------------------
# Analysis


def critical_path(steps: Sequence[Step]) -> list[Step]:
    """The wall-clock chain ending at the last step to finish, in build order.

    From the step that ended last (the longer one on a tie), step back to the
    latest-ending step that had ended when the current one started, until
    none had.
    """
    if not steps:
        return []
    by_end = sorted(steps, key=lambda s: (s.end_ms, s.duration_ms))
    ends = [s.end_ms for s in by_end]
    index = len(by_end) - 1
    chain = [by_end[index]]
    while True:
        # Rightmost step whose end is at or before the current start, and strictly before
        # the current one in end order, so that zero-length steps cannot form a cycle.
        index = min(bisect.bisect_right(ends, by_end[index].start_ms), index) - 1
        if index < 0:
            break
        chain.append(by_end[index])
    chain.reverse()
    return chain


def assign_lanes(steps: Sequence[Step]) -> list[int]:
    """A row per concurrently running step, for timelines and traces.

    Steps are placed in start order into the lowest free row; the result is
    aligned with ``steps``. Rows approximate Ninja's job slots.
    """
    order = sorted(range(len(steps)), key=lambda i: (steps[i].start_ms, steps[i].end_ms))
    lanes = [0] * len(steps)
    busy: list[tuple[int, int]] = []  # (end_ms, lane) of running steps
    free: list[int] = []
    next_lane = 0
    for i in order:
        step = steps[i]
        while busy and busy[0][0] <= step.start_ms:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, next_lane = next_lane, next_lane + 1
        lanes[i] = lane
        heapq.heappush(busy, (step.end_ms, lane))
    return lanes


def summarize(
    log: NinjaLog, *, top: int = TOP_SLOWEST, timeline_limit: int = TIMELINE_LIMIT
) -> dict[str, Any]:
    """The JSON-able breakdown stored in a leg record's ``timings``.

    Keys: ``log_version``, ``steps``, ``wall_seconds`` (first start to last
    end), ``busy_seconds`` (sum of step durations), ``parallelism``,
    ``classes`` (each of device/host/link/other: ``count``, ``seconds``),
    ``slowest`` (the ``top`` longest steps), ``critical_path`` (``seconds``
    spanned, ``busy_seconds``, ``steps``, per-class ``classes`` seconds and
    the ``chain``), and ``timeline``: ``[start_ms, end_ms, class, output]``
    per step in start order (the ``timeline_limit`` longest steps when there
    are more; ``timeline_truncated`` says so).
    """
    steps = log.steps
    classes = {k: {"count": 0, "seconds": 0.0} for k in CLASSES}
    for s in steps:
        classes[s.kind]["count"] += 1
        classes[s.kind]["seconds"] += s.seconds
    for c in classes.values():
        c["seconds"] = round(c["seconds"], 3)
    wall_ms = (max(s.end_ms for s in steps) - min(s.start_ms for s in steps)) if steps else 0
    busy_ms = sum(s.duration_ms for s in steps)
    slowest = sorted(steps, key=lambda s: (-s.duration_ms, s.start_ms))[:top]
    chain = critical_path(steps)
    chain_classes = dict.fromkeys(CLASSES, 0.0)
    for s in chain:
        chain_classes[s.kind] += s.seconds
    timeline = list(steps)
    truncated = len(timeline) > timeline_limit
    if truncated:
        timeline = sorted(timeline, key=lambda s: -s.duration_ms)[:timeline_limit]
    timeline.sort(key=lambda s: (s.start_ms, s.end_ms))
    return {
        "log_version": log.version,
        "steps": len(steps),
        "wall_seconds": wall_ms / 1000.0,
        "busy_seconds": busy_ms / 1000.0,
        "parallelism": round(busy_ms / wall_ms, 2) if wall_ms else 0.0,
        "classes": classes,
        "slowest": [_step_json(s) for s in slowest],
        "critical_path": {
            "seconds": ((chain[-1].end_ms - chain[0].start_ms) / 1000.0) if chain else 0.0,
            "busy_seconds": sum(s.duration_ms for s in chain) / 1000.0,
            "steps": len(chain),
            "classes": {k: round(v, 3) for k, v in chain_classes.items()},
            "chain": [_step_json(s) for s in chain],
        },
        "timeline": [[s.start_ms, s.end_ms, s.kind, s.name] for s in timeline],
        "timeline_truncated": truncated,
    }


def _step_json(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {
        "output": step.name,
        "class": step.kind,
        "seconds": step.seconds,
        "start_ms": step.start_ms,
        "end_ms": step.end_ms,
    }
    if len(step.outputs) > 1:
        out["outputs"] = list(step.outputs)
    return out


def chrome_trace(steps: Sequence[Step]) -> dict[str, Any]:
    """A Chrome trace (opens in Perfetto or ``chrome://tracing``): one row per job slot."""
    lanes = assign_lanes(steps)
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "ninja"}},
    ]
    for step, lane in sorted(zip(steps, lanes, strict=True), key=lambda p: (p[0].start_ms, p[1])):
        events.append(
            {
                "name": step.name,
                "cat": step.kind,
                "ph": "X",
                "ts": step.start_ms * 1000,
                "dur": step.duration_ms * 1000,
                "pid": 1,
                "tid": lane,
                "args": {"outputs": list(step.outputs)} if len(step.outputs) > 1 else {},
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ms"}


# --------------------------------------------------------------------------
# I/O edges


def read_log(path: Path) -> NinjaLog:
    """Read and parse one ``.ninja_log`` file (BuildError when unreadable)."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise BuildError(f"{path}: no Ninja log (has this directory been built with Ninja?)") from None
    except OSError as exc:
        raise BuildError(f"{path}: cannot read Ninja log: {exc.strerror}") from None
    return parse_log(text, source=str(path))


def timings_for_build(build_dir: Path) -> dict[str, Any] | None:
    """The record's ``timings`` for ``build_dir``; None when it has no ``.ninja_log``.

    A log that cannot be read yields ``{"error": message}`` instead of an
    exception: a finished build should not fail over its own statistics.
    """
    path = build_dir / LOG_NAME
    if not path.is_file():
        return None
    try:
        return summarize(read_log(path))
    except BuildError as exc:
        return {"error": str(exc)}
