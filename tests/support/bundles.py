"""Bundles made by tests: the leg's packaging (stage, then pack) without its figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.bundle.make import pack_staged, stage_bundle


def make_bundle(*, pack_cache: Path | None = None, **kwargs: Any) -> Path:
    """Stage and pack an unsigned bundle of a successful build (:func:`pipeline.bundle.make.stage_bundle`'s
    arguments, and the packaging cache); the bundle's path."""
    staged = stage_bundle(**kwargs)
    return pack_staged(staged, out_dir=kwargs["out_dir"], pack_cache=pack_cache)[0]
