"""Bundles made by tests: the leg's packaging without its figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.bundle.make import package_bundle


def make_bundle(**kwargs: Any) -> Path:
    """Package a successful build (:func:`pipeline.bundle.make.package_bundle`'s arguments); the bundle's path."""
    return package_bundle(**kwargs)[0]
