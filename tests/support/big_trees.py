"""Removing what a real-tree leg leaves behind once its tests have read it.

A ROCm or CUDA leg built from the real tree leaves gigabytes per build folder
(the build tree, the bundle's staging folder, a failed check's unpacked
bundle), and pytest keeps the last three runs' temporary folders: on a CI
machine that is tens of gigabytes. The records, logs and bundles stay, for
looking into a failure.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.util.tree_removal import remove_tree

# The folders of ``<out>/<leg>/`` that hold copies or intermediates, not results.
BULKY = ("build", "bundle", "check")


def drop_big_trees(workspace: Path) -> None:
    """Remove each ``<out>/<leg>/{build,bundle,check}`` under ``workspace`` (``out`` found by its records)."""
    for record in sorted(workspace.rglob("record.json")):
        for name in BULKY:
            folder = record.parent / name
            if folder.is_dir() and not folder.is_symlink():
                remove_tree(folder)
