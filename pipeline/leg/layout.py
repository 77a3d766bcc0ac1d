"""Where every build of a leg sees its source tree: ``<out>/<leg>/src/llama.cpp``, whatever the tree.

ccache's base_dir rewriting hands the compiler the tree's files as seen from
the build folder (``../src/llama.cpp/ggml/src/ggml.c``), and ccache hashes
that path: a tree one level further away (``reproduce``'s ``out/reproduce``, a
``--source`` beside the checkout or five folders up) changed every compile
command and missed every object. So the tree is always compiled through one
place relative to the build folder: a source archive is extracted there; a
clone or a ``--source`` folder is linked there. The compile commands then
carry ``../src/llama.cpp`` in every folder, at every depth.

A tree whose ``.git`` is a file (a submodule checkout: ``gitdir:
../../.git/modules/vendor/llama.cpp``; a git worktree) cannot be linked
whole: llama.cpp's ``common/CMakeLists.txt`` joins that gitdir to the place
and makes the configure depend on the index there. Through a link the file
system finds it, but Ninja collapses the ``..`` of the path it is given, finds
no such file and re-runs the configure until "manifest 'build.ninja' still
dirty after 100 tries". Such a tree gets a folder at the place instead: a
link to each of its entries, and a ``.git`` file naming the gitdir by its
absolute path.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pipeline.archives.extract import remove_install
from pipeline.source.archive import ARCHIVE_ROOT
from pipeline.util.tree_removal import remove_tree


def tree_place(work: Path) -> Path:
    """The one folder a leg's build compiles its tree from (``work``: ``<out>/<leg>``)."""
    return work / "src" / ARCHIVE_ROOT


def place_tree(work: Path, tree: Path) -> Path:
    """``tree`` as the build sees it: :func:`tree_place`, a link to ``tree`` unless it is that folder.

    What stood at the place before (an earlier run's link or extracted
    archive) is the pipeline's own and is replaced. The tree itself is left
    where it is when the place would be inside it (an output folder inside
    the source tree: a link there would loop) or when the file system takes
    no link (Windows without the symlink privilege): that build keeps the
    layout it has, as before.
    """
    place = tree_place(work.resolve())
    tree = tree.resolve()
    if place == tree or place.is_relative_to(tree) or tree.is_relative_to(place):
        return tree
    place.parent.mkdir(parents=True, exist_ok=True)
    if (tree / ".git").is_file():
        return _place_entries(place, tree)
    if place.is_symlink() and place.readlink() == tree:
        return place
    remove_install(place)
    try:
        place.symlink_to(tree, target_is_directory=True)
    except OSError:
        return tree
    return place


def absolute_gitdir(tree: Path) -> Path | None:
    """The repository a ``.git`` file names (``gitdir: X``, X relative to the file's folder, as git reads it);
    None when ``tree/.git`` is no such file or names nothing that exists."""
    try:
        text = (tree / ".git").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir: "):
        return None
    gitdir = (tree / first.removeprefix("gitdir: ").strip()).resolve()
    return gitdir if gitdir.is_dir() else None


def _place_entries(place: Path, tree: Path) -> Path:
    """``place`` made a folder of links to ``tree``'s entries and a ``.git`` file with the absolute gitdir.

    Made anew each run (the tree may have gained or lost an entry), beside
    the place and then moved there, so a failed run never leaves half of
    it; the tree itself is never written to. A file system that takes no
    link builds the tree where it is, as for any tree.
    """
    staging = Path(tempfile.mkdtemp(dir=place.parent, prefix=f".{place.name}.", suffix=".new"))
    try:
        for entry in sorted(tree.iterdir()):
            if entry.name != ".git":
                (staging / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    except OSError:
        remove_tree(staging)
        return tree
    try:
        if (gitdir := absolute_gitdir(tree)) is not None:
            (staging / ".git").write_text(f"gitdir: {gitdir}\n", encoding="utf-8")
        remove_install(place)
        staging.rename(place)
    except BaseException:
        if staging.exists():
            remove_tree(staging)
        raise
    return place


def clear_place(path: Path) -> None:
    """Remove a link :func:`place_tree` left at ``path``, before something is checked out there.

    A checkout into the link would write into the folder it points at: a
    user's own tree, given with ``--source`` to an earlier run. The folder of
    links a tree with a ``.git`` file gets is the same danger (its ``.git``
    names the user's repository) and goes too; it is known by holding
    nothing but links and that file, which no checkout does.
    """
    if path.is_symlink():
        path.unlink()
    elif _is_entry_links(path):
        remove_tree(path)  # the links go, never what they point at


def _is_entry_links(path: Path) -> bool:
    """Whether ``path`` is a folder :func:`_place_entries` made: only links, and at most a ``.git`` file."""
    if not path.is_dir():
        return False
    entries = list(path.iterdir())
    return bool(entries) and all(e.is_symlink() or (e.name == ".git" and e.is_file()) for e in entries)
