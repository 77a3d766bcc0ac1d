"""The leg's one tree place (pipeline/leg/layout.py) for a tree whose ``.git`` is a file."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.leg.layout import clear_place, place_tree, tree_place


def submodule_tree(root: Path) -> tuple[Path, Path]:
    """``super/vendor/llama.cpp`` with the ``.git`` file git writes for a submodule, and the gitdir it names."""
    gitdir = root / "super" / ".git" / "modules" / "vendor" / "llama.cpp"
    gitdir.mkdir(parents=True)
    (gitdir / "index").write_bytes(b"DIRC")
    tree = root / "super" / "vendor" / "llama.cpp"
    (tree / "ggml").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("project(t)\n")
    (tree / ".git").write_text("gitdir: ../../.git/modules/vendor/llama.cpp\n")
    return tree, gitdir


def test_the_place_names_the_gitdir_absolutely_and_links_every_entry(tmp_path: Path) -> None:
    tree, gitdir = submodule_tree(tmp_path)
    work = tmp_path / "out" / "cpu"
    place = place_tree(work, tree)
    assert place == tree_place(work) and not place.is_symlink()
    assert (place / ".git").read_text() == f"gitdir: {gitdir}\n"
    assert sorted(p.name for p in place.iterdir()) == [".git", "CMakeLists.txt", "ggml"]
    assert (place / "ggml").readlink() == tree / "ggml"
    # What Ninja does with the path CMake hands it: the `..` collapsed without the file system. It must exist.
    gitdir_there = (place / ".git").read_text().removeprefix("gitdir: ").strip()
    assert Path(os.path.normpath(place / gitdir_there / "index")).is_file()
    # The user's tree is untouched.
    assert (tree / ".git").read_text() == "gitdir: ../../.git/modules/vendor/llama.cpp\n"


def test_a_later_run_sees_the_trees_entries_of_then(tmp_path: Path) -> None:
    tree, _ = submodule_tree(tmp_path)
    work = tmp_path / "out" / "cpu"
    place_tree(work, tree)
    (tree / "ggml").rename(tree / "src")
    place = place_tree(work, tree)
    assert sorted(p.name for p in place.iterdir()) == [".git", "CMakeLists.txt", "src"]
    # Nothing is left beside the place (no staging folder of a run).
    assert [p.name for p in place.parent.iterdir()] == ["llama.cpp"]


def test_clearing_the_place_removes_the_links_and_never_the_tree(tmp_path: Path) -> None:
    tree, _ = submodule_tree(tmp_path)
    place = place_tree(tmp_path / "out" / "cpu", tree)
    clear_place(place)
    assert not place.exists()
    assert sorted(p.name for p in tree.iterdir()) == [".git", "CMakeLists.txt", "ggml"]


def test_clearing_leaves_a_real_checkout_alone(tmp_path: Path) -> None:
    clone = tmp_path / "out" / "src" / "llama.cpp"
    (clone / ".git").mkdir(parents=True)
    (clone / "CMakeLists.txt").write_text("project(t)\n")
    clear_place(clone)
    assert sorted(p.name for p in clone.iterdir()) == [".git", "CMakeLists.txt"]
