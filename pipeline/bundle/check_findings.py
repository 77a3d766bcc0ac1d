"""What check-bundle finds: one problem, and what a walk over the bundle's files has found so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One reason the bundle would not run on a clean machine."""

    file: str
    kind: str  # "library", "runpath", "glibc", "license", "smoke", "arch", "macos", "signature", "runtime"
    message: str
    library: str | None = None

    @property
    def line(self) -> str:
        return f"{self.file}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "kind": self.kind, "library": self.library, "message": self.message}


@dataclass
class TreeFindings:
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    glibc: tuple[int, ...] | None = None
    glibc_by: str | None = None
