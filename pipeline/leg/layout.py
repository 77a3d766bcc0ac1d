"""Where every build of a leg sees its source tree: ``<out>/<leg>/src/llama.cpp``, whatever the tree.

ccache's base_dir rewriting hands the compiler the tree's files as seen from
the build folder (``../src/llama.cpp/ggml/src/ggml.c``), and ccache hashes
that path: a tree one level further away (``reproduce``'s ``out/reproduce``, a
``--source`` beside the checkout or five folders up) changed every compile
command and missed every object. So the tree is always compiled through one
place relative to the build folder: a source archive is extracted there; a
clone or a ``--source`` folder is linked there. The compile commands then
carry ``../src/llama.cpp`` in every folder, at every depth.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.archives.extract import remove_install
from pipeline.source.archive import ARCHIVE_ROOT


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
    if place.is_symlink() and place.readlink() == tree:
        return place
    place.parent.mkdir(parents=True, exist_ok=True)
    remove_install(place)
    try:
        place.symlink_to(tree, target_is_directory=True)
    except OSError:
        return tree
    return place


def clear_place(path: Path) -> None:
    """Remove a link :func:`place_tree` left at ``path``, before something is checked out there.

    A checkout into the link would write into the folder it points at: a
    user's own tree, given with ``--source`` to an earlier run.
    """
    if path.is_symlink():
        path.unlink()
