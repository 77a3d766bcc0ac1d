"""The per-leg result record: one JSON object per leg run.

The console table, the JSON file and the markdown summary are all rendered
from this one object.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError
from pipeline.guard.locks import is_held
from pipeline.util.fsutil import atomic_write_json

RECORD_NAME = "record.json"
# Beside the record: the lock a leg run holds on its output folder (pipeline.guard.locks).
LOCK_NAME = ".lock"
# What a record's status can say. "running" is written before any work; a
# "running" record whose run holds no lock any more reads as "interrupted".
STATUSES = ("running", "success", "failed", "interrupted")


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
    wall_seconds: float = 0.0
    # One of STATUSES.
    status: str = "success"
    # {"path" or "url", "tag", "commit"}
    source: dict[str, Any] = field(default_factory=dict)
    cmake_args: list[str] = field(default_factory=list)
    # See pipeline.ccache.session.CcacheRun.to_record().
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
        record = cls.from_json(data)
        if record.status == "running" and not is_held(leg_lock(path.parent)):
            # The run that wrote it died (killed, power lost) without ending its record.
            record.status = "interrupted"
            record.warnings = [*record.warnings, f"{path}: the run that started at {record.started} "
                               "is gone without finishing (stale 'running' record)"]
        return record
