"""Read-only access to the real llama.cpp tree's files, straight from the cached sdist.

For checks that read the tree without building it (the flags audit, the HIP
version it requires): nothing is downloaded or extracted. The sdist is the
one scripts/workload/llama_sdist.py keeps in the test cache; where it is absent
(``scripts.workload.llama_sdist.cached_sdist`` answers None) such a test is skipped with that reason.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from scripts.workload.llama_sdist import SDIST_VERSION

# The vendored tree inside the sdist.
TREE_PREFIX = f"llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp/"


def tree_texts(sdist: Path, wanted: Callable[[PurePosixPath], bool]) -> dict[str, str]:
    """The text of every file of the vendored tree that ``wanted`` takes, by its path in the tree."""
    found: dict[str, str] = {}
    with tarfile.open(sdist) as tar:
        for member in tar:
            if not member.isfile() or not member.name.startswith(TREE_PREFIX):
                continue
            path = PurePosixPath(member.name[len(TREE_PREFIX) :])
            if wanted(path):
                handle = tar.extractfile(member)
                assert handle is not None
                found[str(path)] = handle.read().decode("utf-8", errors="replace")
    return found


def is_cmake_file(path: PurePosixPath) -> bool:
    """A file CMake reads: a CMakeLists.txt or a ``.cmake`` module (not the vendored third-party trees' tests)."""
    return path.name == "CMakeLists.txt" or path.suffix == ".cmake"
