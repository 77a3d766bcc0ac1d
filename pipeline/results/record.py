"""The per-leg result record: one JSON object per leg run.

The console table, the JSON file and the markdown summary are all rendered
from this one object.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError
from pipeline.processes.locks import is_held
from pipeline.util.fsutil import atomic_write_json

RECORD_NAME = "record.json"
# Beside the record: the lock a leg run holds on its output folder (pipeline.processes.locks).
LOCK_NAME = ".lock"
# What a record's status can say. "running" is written before any work; a
# "running" record whose run holds no lock any more reads as "interrupted". "configured": a run asked to
# stop after CMake's configure (``build --configure-only``) did so; nothing was compiled or bundled. "staged":
# built, the bundle's files staged for the workflow's signing step; ``pack`` ends it "success" (docs/signing.md).
# "warmed": a warm-up's run compiled next week's build into the leg's ccache, and made no bundle (docs/caches.md).
# "sharded": a shard run (``python -m pipeline shard``) compiled its part of the leg into its shard's cache;
# nothing was linked or bundled (its record lives in the shard's own output folder, never beside a leg's).
STATUSES = ("running", "success", "configured", "staged", "warmed", "sharded", "failed", "interrupted")


def leg_lock(work: Path) -> Path:
    """The lock of a leg's output folder: one run at a time writes it."""
    return work / LOCK_NAME


# The fields without a default: a record lacking one cannot be rendered or compared.
REQUIRED_FIELDS = ("leg", "backend", "os", "started")


@dataclass(kw_only=True)
class LegRecord:
    leg: str
    backend: str
    os: str
    # ISO-8601 UTC moment the run started.
    started: str
    # The CPU architecture the bundle is for (older records have none: x64).
    arch: str = "x64"
    wall_seconds: float = 0.0
    # One of STATUSES.
    status: str = "success"
    # {"path" or "url", "tag", "commit"}
    source: dict[str, Any] = field(default_factory=dict)
    cmake_args: list[str] = field(default_factory=list)
    # See pipeline.ccache.session.CcacheSetup.to_record(); a vulkan leg's has "glslc", the shader cache's counts.
    ccache: dict[str, Any] = field(default_factory=dict)
    # See pipeline.toolchain.Toolchain.to_record().
    toolchain: dict[str, Any] = field(default_factory=dict)
    # {"configure": seconds, "build": seconds, ...}
    phases: dict[str, float] = field(default_factory=dict)
    # Ninja timings breakdown (pipeline.results.ninjalog), when available.
    timings: dict[str, Any] | None = None
    # Path of the bundle this run produced, relative to the output folder.
    bundle: str | None = None
    # check-bundle's verdict on that bundle (pipeline.bundle.check.BundleCheck.to_json()).
    bundle_check: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    # A failed run's one error line and the exit code it ended with (None: it did not fail on an error of
    # the pipeline's): ``alert`` quotes it, and a check-bundle failure is told from a failed build by its code.
    error: str | None = None
    exit_code: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: Path) -> None:
        atomic_write_json(path, self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LegRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def read(cls, path: Path) -> LegRecord:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PipelineError(f"{path}: no such record") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PipelineError(f"{path}: not a readable record: {exc}") from None
        if not isinstance(data, dict):
            raise PipelineError(f"{path}: bad record: not a JSON object")
        # Every renderer relies on these; a record without them is refused here, naming the file.
        missing = [key for key in REQUIRED_FIELDS if not isinstance(data.get(key), str) or not data[key]]
        if missing:
            raise PipelineError(f"{path}: bad record: missing or empty {', '.join(repr(k) for k in missing)}")
        if problem := record_problem(data):
            raise PipelineError(f"{path}: bad record: {problem}")
        record = cls.from_json(data)
        if record.status == "running" and not is_held(leg_lock(path.parent)):
            # The run that wrote it died (killed, power lost) without ending its record.
            record.status = "interrupted"
            record.warnings = [
                *record.warnings,
                f"{path}: the run that started at {record.started} "
                "is gone without finishing (stale 'running' record)",
            ]
        return record


# --------------------------------------------------------------------------
# Validation: a record is another job's artifact, read once here into typed values.


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _timings_problem(timings: Any) -> str | None:
    if not isinstance(timings, dict):
        return f"'timings' is {_shown(timings)}, expected an object or null"
    classes = timings.get("classes", {})
    if not isinstance(classes, dict) or not all(
        isinstance(v, dict) and _is_number(v.get("seconds", 0.0)) for v in classes.values()
    ):
        return "'timings.classes' is not an object of {\"seconds\": number} entries"
    timeline = timings.get("timeline", [])
    if not isinstance(timeline, list) or not all(
        isinstance(t, list) and len(t) >= 4 and _is_number(t[0]) and _is_number(t[1]) for t in timeline
    ):
        return "'timings.timeline' is not a list of [start_ms, end_ms, class, output] entries"
    return None


def _bundle_check_problem(check: Any) -> str | None:
    if not isinstance(check, dict):
        return f"'bundle_check' is {_shown(check)}, expected an object or null"
    if "ok" in check and not isinstance(check["ok"], bool):
        return f"'bundle_check.ok' is {_shown(check['ok'])}, expected true or false"
    if "summary" in check and not isinstance(check["summary"], str | None):
        return f"'bundle_check.summary' is {_shown(check['summary'])}, expected a string"
    problems = check.get("problems", [])
    # Objects as check-bundle writes them (pipeline.bundle.check.Problem), or plain lines.
    if not isinstance(problems, list) or not all(isinstance(p, dict | str) for p in problems):
        return "'bundle_check.problems' is not a list of problems"
    return None


def record_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a record's fields' types (one phrase), or None.

    Every reader (report, cache-save, publish) then works on typed values
    and never meets a string where it expects a number or an object.
    """
    for key in ("source", "ccache", "toolchain", "phases"):
        if key in data and not isinstance(data[key], dict):
            return f"{key!r} is {_shown(data[key])}, expected an object"
    for key in ("cmake_args", "warnings"):
        if key in data and not (isinstance(data[key], list) and all(isinstance(v, str) for v in data[key])):
            return f"{key!r} is {_shown(data[key])}, expected a list of strings"
    if "wall_seconds" in data and not (_is_number(data["wall_seconds"]) and data["wall_seconds"] >= 0):
        return f"'wall_seconds' is {_shown(data['wall_seconds'])}, expected a number of seconds"
    if "status" in data and data["status"] not in STATUSES:
        return f"'status' is {_shown(data['status'])}, expected one of {', '.join(STATUSES)}"
    if not all(_is_number(v) for v in data.get("phases", {}).values()):
        return "'phases' is not an object of seconds"
    if data.get("bundle") is not None and not isinstance(data["bundle"], str):
        return f"'bundle' is {_shown(data['bundle'])}, expected a path or null"
    if data.get("timings") is not None and (problem := _timings_problem(data["timings"])):
        return problem
    if data.get("bundle_check") is not None and (problem := _bundle_check_problem(data["bundle_check"])):
        return problem
    if data.get("error") is not None and not isinstance(data["error"], str):
        return f"'error' is {_shown(data['error'])}, expected a string or null"
    code = data.get("exit_code")
    if code is not None and not (isinstance(code, int) and not isinstance(code, bool) and 0 < code < 256):
        return f"'exit_code' is {_shown(code)}, expected an exit code (1-255) or null"
    return None
