"""A built tar.gz bundle, unpacked for a test to read its files."""

from __future__ import annotations

import tarfile
from pathlib import Path


def extract_top(bundle: Path, dest: Path) -> Path:
    """Unpack ``bundle`` into the new folder ``dest``; its one top folder (upstream's ``llama-<tag>/``)."""
    dest.mkdir(parents=True)
    with tarfile.open(bundle) as tar:
        tar.extractall(dest, filter="tar")
    (top,) = dest.iterdir()
    return top
