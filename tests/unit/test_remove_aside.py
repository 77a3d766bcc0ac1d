"""remove_aside: the path is free at once, what it held is removed by a thread, by remove_tree's rules."""

from __future__ import annotations

from pathlib import Path

from pipeline.util.tree_removal import aside_name, remove_aside


def test_the_path_is_free_at_once_and_the_tree_is_removed_without_following_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    build = tmp_path / "work" / "build"
    (build / "sub").mkdir(parents=True)
    (build / "sub" / "a.o").write_bytes(b"\0" * 1000)
    (build / "link").symlink_to(outside, target_is_directory=True)
    (build / "sub").chmod(0o500)  # a read-only folder inside, as an archive may leave one
    stale = tmp_path / "work" / (aside_name(build) + "earlier")
    (stale / "build").mkdir(parents=True)
    removal = remove_aside(build)
    assert not build.exists()
    build.mkdir()  # the new build folder, while the old one goes
    assert removal.wait() == []
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["build"]
    assert (outside / "keep.txt").read_text() == "keep\n"
